"""A pair dataset as preference data for pairwise reward trainers: each source's positive against each of its
negatives that changes the clip (a caption edit changes the text, not the clip, and is left out), the positive
preferred.

Each side is written as the clip its judge was shown in training (`avjudge.data.pair_clip`: the negative applied,
cut to the pair's window), a video file with its sound (and a WAV of the sound for trainers that read audio apart),
once per pair record, so lazy negatives export too.

- ``pairs-csv``: VideoAlign's training CSV (KwaiVGI/VideoAlign, ``datasets/train/README.md``): ``path_A, path_B,
  prompt``, a label column per dimension (``AV``, ``VT`` or ``AT``: ``A``, ``B``, or ``same`` for a negative its
  recipe marked a tie), ``fps_A, num_frames_A, fps_B, num_frames_B``; the positive is A and B by turns.
- ``llamafactory-ranking``: LLaMA-Factory's sharegpt ranking records (``"ranking": true`` in ``dataset_info.json``):
  both clips in the user turn (``Clip A: <video><audio> Clip B: ...``, `avjudge.prompts.render_pair_query`), their
  files in ``videos`` and ``audios`` in that order, ``chosen`` and ``rejected`` the two verdicts; each pair in both
  orders; a tie, which has neither, left out.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tqdm import tqdm

from ..media import encode_audio, encode_video
from ..perturb import SourcePool
from ..prompts import CHAT_FORMATS, PAIR_ANSWERS, media_kinds, render_pair_query
from ..prompts import task as judge_task
from .build import built_sources
from .pairs import DecodedSources, pair_clip

TAGS = {"video": "<video>", "audio": "<audio>"}


def preference_pairs(records: list[dict]) -> tuple[list[tuple[dict, dict]], int]:
    """(positive, negative) of each source, for each negative that changes the clip; and how many caption edits
    were left out."""
    positives: dict = {}
    for r in records:
        if r["label"]:
            positives.setdefault(r["source_id"], []).append(r)
    pairs, edits = [], 0
    for r in records:
        if r["label"]:
            continue
        if r["strategy"] == "text_edit":
            edits += 1
            continue
        pairs += [(positive, r) for positive in positives.get(r["source_id"], [])]
    return pairs, edits


class ClipWriter:
    """Writes a pair record's clip, as its judge was shown it, once: ``clips/ID.mp4`` (and ``clips/ID.wav``)."""

    def __init__(self, dataset: Path, out: Path, pairs: dict[tuple[str, str], list[dict]], progress: bool = False):
        self.dataset, self.folder = dataset, out / "clips"
        self.pool = SourcePool(built_sources(dataset))
        self.decoded = DecodedSources(budget_mb=512)  # a source shared by many pairs decoded once
        self.written: dict[str, dict] = {}
        total = sum(len(records) for records in pairs.values())
        self.bar = tqdm(total=total, desc="writing clips", unit="clip", disable=not progress, leave=False)

    def __call__(self, record: dict) -> dict:
        """{"video": path, "audio": path, "fps", "frames"} of the record's clip; "video" None where its judge reads
        no picture (AT), "audio" None where it hears no sound (VT)."""
        if record["id"] in self.written:
            return self.written[record["id"]]
        clip = pair_clip(record, self.pool, root=self.dataset, sources=self.decoded)
        name = record["id"].replace("/", "_")
        video = audio = None
        if clip.frames is not None:
            video = encode_video(self.folder / f"{name}.mp4", clip.frames, clip.fps, clip.audio, clip.sample_rate)
        if clip.audio is not None:
            audio = encode_audio(self.folder / f"{name}.wav", clip.audio, clip.sample_rate)
        self.written[record["id"]] = {"video": video and str(video), "audio": audio and str(audio),
                                      "fps": clip.fps, "frames": clip.num_frames}  # fmt: skip
        self.bar.update()
        return self.written[record["id"]]


def export_pairs_csv(
    dataset: Path, out: Path, pairs: dict[tuple[str, str], list[dict]], progress: bool = False
) -> list[Path]:
    """VideoAlign's CSV, a file per judge and split (``pairs_<judge>_<split>.csv``), of ``pairs`` (`built_pairs`)."""
    write, written = ClipWriter(dataset, out, pairs, progress), []
    for (judge, split), records in pairs.items():
        pairs, _ = preference_pairs(records)
        if not pairs:
            continue
        path = out / f"pairs_{judge}_{split}.csv"
        columns = ["path_A", "path_B", "prompt", judge.upper(), "fps_A", "num_frames_A", "fps_B", "num_frames_B"]
        with open(path, "w", newline="") as f:
            rows = csv.DictWriter(f, columns)
            rows.writeheader()
            for k, (positive, negative) in enumerate(pairs):
                first, second = (positive, negative) if k % 2 == 0 else (negative, positive)
                a, b = write(first), write(second)
                rows.writerow({
                    "path_A": a["video"], "path_B": b["video"], "prompt": positive.get("text") or "",
                    judge.upper(): "same" if negative.get("tie") else "A" if first is positive else "B",
                    "fps_A": a["fps"], "num_frames_A": a["frames"], "fps_B": b["fps"], "num_frames_B": b["frames"],
                })  # fmt: skip
        written.append(path)
    return written


def export_llamafactory_ranking(
    dataset: Path, out: Path, pairs: dict[tuple[str, str], list[dict]], progress: bool = False
) -> list[Path]:
    """LLaMA-Factory's sharegpt ranking files, one per judge and split, of ``pairs`` (`built_pairs`), and their
    ``dataset_info.json``."""
    write, written, info = ClipWriter(dataset, out, pairs, progress), [], {}
    for (judge, split), records in pairs.items():
        pairs, _ = preference_pairs(records)
        if not pairs:
            continue
        kinds = media_kinds(judge)
        system = CHAT_FORMATS[judge_task(judge).family].system
        rows = []
        for positive, negative in pairs:
            if negative.get("tie"):  # a ranking has a chosen and a rejected answer: a tie has neither
                continue
            for first, second in ((positive, negative), (negative, positive)):
                clips = [write(first), write(second)]
                query = render_pair_query(judge, "".join(TAGS[k] for k in kinds), positive.get("text"),
                                          positive.get("utterance"))  # fmt: skip
                verdicts = PAIR_ANSWERS if first is positive else PAIR_ANSWERS[::-1]
                row = {
                    "messages": ([{"role": "system", "content": system}] if system else [])
                    + [{"role": "user", "content": query}],
                    "chosen": {"role": "assistant", "content": verdicts[0]},
                    "rejected": {"role": "assistant", "content": verdicts[1]},
                }
                if "video" in kinds:
                    row["videos"] = [c["video"] for c in clips]
                if "audio" in kinds:
                    row["audios"] = [c["audio"] for c in clips]
                rows.append(row)
        name = f"{judge}_{split}_ranking"
        path = out / f"{name}.json"
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1))
        columns = {"messages": "messages", "chosen": "chosen", "rejected": "rejected"}
        columns.update({k: k for k in ("videos", "audios") if k in rows[0]})
        info[name] = {"file_name": path.name, "formatting": "sharegpt", "ranking": True, "columns": columns,
                      "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                               "assistant_tag": "assistant", "system_tag": "system"}}  # fmt: skip
        written.append(path)
    (out / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return written + [out / "dataset_info.json"]


PREFERENCE_EXPORTERS = {"pairs-csv": export_pairs_csv, "llamafactory-ranking": export_llamafactory_ranking}
