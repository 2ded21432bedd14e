"""Export pairs for other trainers: LLaMA-Factory (sharegpt JSON) and ms-swift (JSONL) as Yes / No examples, or as
preference pairs (`avjudge.data.preference_export`: VideoAlign's CSV, LLaMA-Factory's ranking format).

The Yes / No exports use ``{"messages", "videos", "audios"}`` with ``<video>`` / ``<audio>`` tags, and the
same system prompt, query and answer the judges are scored with (avjudge.prompts). Each pair's clip is written as
`train` shows it (`ClipWriter`: the negative applied, picture and sound cut to the pair's window), positives and
negatives alike: a source's whole file beside a window of sound would teach its length as the answer.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..config import ConfigError
from ..errors import AvjudgeError
from ..prompts import ANSWERS, CHAT_FORMATS, media_kinds, render_query
from ..prompts import task as judge_task
from .build import built_pairs
from .preference_export import PREFERENCE_EXPORTERS, TAGS, ClipWriter


class ExportError(AvjudgeError, ValueError):
    pass


def to_messages(record: dict, clip: dict, family: str | None = None) -> dict:
    """The Yes / No example of a pair ``record`` whose clip `ClipWriter` wrote as ``clip``."""
    judge = record["dimension"]
    family = family or judge_task(judge).family
    kinds = media_kinds(judge)
    user = "".join(TAGS[k] for k in kinds) + render_query(judge, record.get("text"), record.get("utterance"))
    messages = []
    system = CHAT_FORMATS[family].system
    if system:
        messages.append({"role": "system", "content": system})
    messages += [{"role": "user", "content": user}, {"role": "assistant", "content": ANSWERS[record["label"]]}]
    row = {"messages": messages}
    if "video" in kinds:
        row["videos"] = [clip["video"]]
    if "audio" in kinds:
        row["audios"] = [clip["audio"]]
    return row


def _write_llamafactory(rows_by_name: dict[str, list[dict]], out: Path) -> list[Path]:
    written, info = [], {}
    for name, rows in rows_by_name.items():
        path = out / f"{name}.json"
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1))
        columns = {"messages": "messages"}
        columns.update({k: k for k in ("videos", "audios") if rows and k in rows[0]})
        info[name] = {
            "file_name": path.name,
            "formatting": "sharegpt",
            "columns": columns,
            "tags": {
                "role_tag": "role",
                "content_tag": "content",
                "user_tag": "user",
                "assistant_tag": "assistant",
                "system_tag": "system",
            },
        }
        written.append(path)
    (out / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return written + [out / "dataset_info.json"]


def _write_swift(rows_by_name: dict[str, list[dict]], out: Path) -> list[Path]:
    written = []
    for name, rows in rows_by_name.items():
        path = out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        written.append(path)
    return written


EXPORTERS = {"llamafactory": _write_llamafactory, "swift": _write_swift}


FORMATS = (*EXPORTERS, *PREFERENCE_EXPORTERS)


def export_dataset(dataset: str | Path, fmt: str, out: str | Path, progress: bool = False) -> list[Path]:
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}")
    root, out = Path(dataset), Path(out)
    pairs = built_pairs(root)  # every record read strictly before anything is written
    if not pairs:
        raise ExportError(f"{root}: no pairs found; build them with `avjudge data build`")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: a file is there; name a folder for the export")
    out.mkdir(parents=True, exist_ok=True)
    if fmt in PREFERENCE_EXPORTERS:
        return PREFERENCE_EXPORTERS[fmt](root, out, pairs, progress)
    write = ClipWriter(root, out, pairs, progress)
    rows = {
        f"{judge}_{split}": [to_messages(r, write(r)) for r in records] for (judge, split), records in pairs.items()
    }
    return EXPORTERS[fmt](rows, out)
