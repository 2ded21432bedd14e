"""SonicBench (Sun et al. 2026, arXiv:2601.11039) as a benchmark suite: 12 physical attributes of sound, each asked
in two paradigms (recognition: one 4 s clip against a threshold; comparison: two 4 s clips and 0.5 s of silence,
which is more X), A or B.

Its authors release each model's raw predictions as ``<folder>/<attribute>_<comparison|recog>.jsonl`` (``audio_path,
prompt, prediction, reference``); `SonicBench.read_answers` reads such a folder, a folder of them or the packed
``Results.tar.gz`` as it is. The item id is the wav's file name without its folder (``pitch_pair_000``).

The paper's answer rule (Appendix I: exact letter, then punctuation stripped, then a list of regular expressions that
the paper does not print) is, as far as the 36 released files show, the first standalone letter of the lowercased
response: that reproduces every printed cell but ten of one model (docs: benchmarks). It credits the article in "a
sound" as answer A, so a model that writes sentences gains or loses by how often it starts one with "a". The strict
rule (`avjudge.omni.parsing.strict_answer`, shared by the suites) reads a letter only where the response is
the letter, opens with it ("B. slow."), states it ("the answer is B") or ends on it alone.
"""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePath

from ....data.questions import ChoiceQuestion
from ....stats import printed
from ...base import Answer, Scored, SuiteError
from ...parsing import strict_answer
from ...suite import Suite, register

ATTRIBUTES = (
    "pitch",
    "brightness",
    "loudness",
    "velocity",
    "duration",
    "tempo",
    "direction",
    "distance",
    "reverberation",
    "texture",
    "timbre",
    "counting",
)  # the column order of the paper's tables
PARADIGMS = ("comparison", "recognition")
RELEASE_PARADIGM = {"comparison": "comparison", "recog": "recognition"}  # file-name suffix -> paradigm
WAV_KIND = {"comparison": "pair", "recognition": "single"}  # <attribute>_<kind>_NNN.wav
# the release's model folders and the names the paper's tables give them
PAPER_NAMES = {
    "BAT": "BAT",
    "MU-LLaMA": "MU-LLaMA",
    "LLaMA-Omni": "LLaMA-Omni",
    "audio_flamingo_3": "Audio Flamingo 3",
    "GLM-4-Voice": "GLM-4-Voice",
    "VITA-Audio": "VITA-Audio-Plus-Vanilla",
    "audio-flamingo_2": "Audio Flamingo 2",
    "Voxtral": "Voxtral-Mini",
    "LLaMA-Omni2": "LLaMA-Omni2",
    "SALMONN": "SALMONN",
    "Baichuan-Audio": "Baichuan-Audio-Instruct",
    "Qwen2-Audio": "Qwen2-Audio-Instruct",
    "r1-aqa": "R1-AQA",
    "Step-Audio2": "Step-Audio 2 mini",
    "MiMo-Audio": "MiMo-Audio",
    "dasheng-lm": "MiDashengLM",
    "Kimi-Audio": "Kimi-Audio-Instruct",
    "GPT4o_audio": "GPT-4o-Audio",
    "mellow": "Mellow",
    "GAMA": "GAMA",
    "audio-flamingo_2_Sound-CoT": "Audio Flamingo 2 Sound-CoT",
    "audio_flamingo_3_think_mode": "Audio Flamingo 3 (think mode)",
    "r1-aqa_think_mode": "R1-AQA (think mode)",
    "Step-Audio2_think": "Step-Audio 2 mini Think",
    "Audio-Reasoner": "Audio-Reasoner",
    "step_audio_r1": "Step-Audio-R1",
    "MiMo-Audio_think_mode": "MiMo-Audio (think mode)",
    "VITA": "VITA-1.5",
    "OpenOmni": "OpenOmni",
    "Baichuan-Omni-1.5": "Baichuan-Omni-1.5",
    "HumanOmni": "HumanOmni",
    "Ming": "Ming-Lite-Omni-1.5",
    "Ola": "Ola",
    "Qwen2.5-Omni": "Qwen2.5-Omni",
    "Qwen3-Omni": "Qwen3-Omni-Instruct",
    "Gemini": "Gemini-2.5-Flash",
}
COVERAGE_THRESHOLD = 0.60  # an attribute a model "handles" (the paper's Figure 6)
RELEASE_FILE = re.compile(r"^(?P<attribute>[a-z]+)_(?P<paradigm>comparison|recog)\.jsonl$")


def paper_answer(response: str, letters: tuple[str, ...] = ("A", "B"), options: tuple[str, ...] = ()) -> str | None:
    """The letter SonicBench's scoring reads: the first of the offered letters standing alone as a word, in any
    case; None (an abstention) where there is none."""
    found = re.search(r"\b([" + "".join(letters).lower() + r"])\b", response.strip().lower())
    return found.group(1).upper() if found else None


def _wav_id(audio_path: str) -> str:
    """``pitch_pair_000`` from the authors' absolute path (either separator)."""
    return PurePath(re.split(r"[\\/]", audio_path)[-1]).stem


@register
class SonicBench(Suite):
    name = "sonicbench"
    description = "SonicBench: 12 physical attributes of sound x recognition / comparison, A or B (audio)"
    judge_task = "choice_a"
    letters = ("A", "B")
    parsers = {"paper": paper_answer, "strict": strict_answer}

    # ---- release files ----------------------------------------------------------------------------------------

    def _release_files(self, path: Path) -> Iterator[tuple[str, str, str, bytes]]:
        """(model folder, attribute, paradigm, bytes) of every prediction file under ``path`` (a folder of model
        folders, one model folder, or a .tar.gz of them); a file or folder that does not fit is noted and skipped."""
        if path.is_file() and path.name.endswith((".tar.gz", ".tgz", ".tar")):
            with tarfile.open(path) as tar:
                members = [m for m in tar.getmembers() if m.isfile()]
                entries = [(PurePath(m.name), m) for m in members]
                yield from self._matched(path, entries, lambda m: tar.extractfile(m).read())
            return
        if not path.exists():
            raise SuiteError(
                f"{path}: no such file or folder; the released predictions are Results.tar.gz of "
                "github.com/EIT-NLP/SonicBench (download it, then give its path)"
            )
        if not path.is_dir():
            raise SuiteError(
                f"{path}: not a SonicBench release (a Results folder of model folders, one model folder, or "
                "Results.tar.gz)"
            )
        entries = [(p.relative_to(path.parent), p) for p in sorted(path.rglob("*")) if p.is_file()]
        yield from self._matched(path, entries, Path.read_bytes)

    def _matched(self, source: Path, entries: list, read) -> Iterator[tuple[str, str, str, bytes]]:
        folders: dict[str, int] = {}
        for name, handle in entries:
            if name.suffix != ".jsonl":
                continue
            model = name.parent.name
            folders.setdefault(model, 0)
            match = RELEASE_FILE.match(name.name)
            if not match or match["attribute"] not in ATTRIBUTES:
                self.notes.append(
                    f"{source}: {name} skipped: not <attribute>_<comparison|recog>.jsonl with one of {ATTRIBUTES}"
                )
                continue
            folders[model] += 1
            yield model, match["attribute"], RELEASE_PARADIGM[match["paradigm"]], read(handle)
        for model, n in folders.items():
            if n == 0:
                self.notes.append(f"{source}: folder {model!r} skipped: no SonicBench prediction files in it")
            elif n < len(ATTRIBUTES) * len(PARADIGMS):
                self.notes.append(
                    f"{source}: folder {model!r} has {n} of {len(ATTRIBUTES) * len(PARADIGMS)} prediction files; "
                    "its averages are left empty"
                )
        if not folders:
            raise SuiteError(f"{source}: no SonicBench prediction files (<model>/<attribute>_<comparison|recog>.jsonl)")

    def read_answers(self, path: Path) -> Iterator[Answer]:
        """The release's predictions (or avjudge answers JSONL, a ``.jsonl`` file); a malformed line is an answer
        with an error naming the file and line."""
        if path.is_file() and path.suffix == ".jsonl":
            yield from super().read_answers(path)
            return
        for model, attribute, paradigm, data in self._release_files(path):
            file = f"{path}:{model}/{attribute}_{'recog' if paradigm == 'recognition' else paradigm}.jsonl"
            for line, text in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
                if text.strip():
                    yield self._release_answer(text, model, attribute, paradigm, f"{file}:{line}")

    def _release_answer(self, text: str, model: str, attribute: str, paradigm: str, where: str) -> Answer:
        groups = {"attribute": attribute, "paradigm": paradigm}
        try:
            raw = json.loads(text)
            missing = [k for k in ("audio_path", "prediction", "reference") if k not in raw]
        except ValueError as err:
            return Answer(where, model, None, f"{where}: not valid JSON ({err})", groups=groups, where=where)
        if missing:
            error = f"{where}: prediction has no {', '.join(missing)} (lines hold audio_path, prediction, reference)"
            return Answer(where, model, None, error, groups=groups, where=where)
        if raw["reference"] not in self.letters:
            error = f"{where}: reference {raw['reference']!r} is not A or B"
            return Answer(_wav_id(raw["audio_path"]), model, None, error, groups=groups, where=where)
        prediction = raw["prediction"] if isinstance(raw["prediction"], str) else json.dumps(raw["prediction"])
        return Answer(_wav_id(raw["audio_path"]), model, prediction, None, raw["reference"], groups, where)

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        """The items of the benchmark's own question files (``<attribute>_<comparison|recog>.json`` or ``.jsonl``:
        lists of ``audio_path, prompt, reference|answer``; a released prediction folder holds the same fields),
        the media resolved under ``media_root`` by file name."""
        files = sorted(p for p in ([path] if path.is_file() else path.iterdir()) if p.suffix in (".json", ".jsonl"))
        media = {p.name: p for p in media_root.rglob("*.wav")} if media_root else {}
        questions = []
        for file in files:
            match = RELEASE_FILE.match(file.stem + ".jsonl")
            if not match or match["attribute"] not in ATTRIBUTES:
                self.notes.append(f"{file}: skipped: not <attribute>_<comparison|recog>.json")
                continue
            text = file.read_text(encoding="utf-8")
            items = json.loads(text) if file.suffix == ".json" else [json.loads(t) for t in text.splitlines() if t]
            paradigm = RELEASE_PARADIGM[match["paradigm"]]
            for i, item in enumerate(items, start=1):
                gold = item.get("reference", item.get("answer"))
                if not item.get("audio_path") or not item.get("prompt") or gold not in self.letters:
                    raise SuiteError(f"{file} item {i}: needs audio_path, prompt and reference A or B")
                name = re.split(r"[\\/]", item["audio_path"])[-1]
                questions.append(
                    ChoiceQuestion(
                        id=_wav_id(name),
                        media=str(media.get(name, name)),
                        question=item["prompt"],
                        options=self.letters,
                        answer=gold,
                        category=f"{match['attribute']}/{paradigm}",
                        prompt=item["prompt"],
                        groups={"attribute": match["attribute"], "paradigm": paradigm},
                    )
                )
        if not questions:
            raise SuiteError(f"{path}: no SonicBench question files (<attribute>_<comparison|recog>.json)")
        return questions

    # ---- tables -----------------------------------------------------------------------------------------------

    def table(self, scored: list[Scored]) -> dict:
        """``{"average", "comparison", "recognition", "coverage", "attributes": {attribute: {"comparison",
        "recognition", "overall"}}}``: overall is the mean of the two paradigms, the averages are means over the
        12 attributes (None where a cell has no answers), coverage counts attributes of overall >= 0.60."""
        counts: dict[tuple[str, str], list[int]] = {}
        for s in scored:
            cell = counts.setdefault((s.groups.get("attribute"), s.groups.get("paradigm")), [0, 0])
            cell[0] += 1
            cell[1] += s.correct
        cells = {key: k / n for key, (n, k) in counts.items()}
        attributes = {}
        for attribute in ATTRIBUTES:
            row = {p: cells.get((attribute, p)) for p in PARADIGMS}
            both = [v for v in row.values() if v is not None]
            attributes[attribute] = {**row, "overall": sum(both) / 2 if len(both) == 2 else None}

        def mean(key: str) -> float | None:
            values = [a[key] for a in attributes.values()]
            return None if None in values else sum(values) / len(values)

        return {
            "average": mean("overall"),
            "comparison": mean("comparison"),
            "recognition": mean("recognition"),
            "coverage": sum(
                a["overall"] is not None and a["overall"] >= COVERAGE_THRESHOLD - 1e-9 for a in attributes.values()
            ),
            "attributes": attributes,
        }

    def markdown(self, report: dict) -> str:
        models = {
            f"{m} ({PAPER_NAMES[m]})" if PAPER_NAMES.get(m, m) != m else m: block
            for m, block in report["models"].items()
        }
        header = "| Model | " + " | ".join(a.capitalize() for a in ATTRIBUTES) + " | Avg. |"
        rule = "|---" * (len(ATTRIBUTES) + 2) + "|"
        lines = [f"# SonicBench ({report['parser']} answer rule)", ""]
        for title, key, average in (
            ("Accuracy per attribute, both paradigms (the paper's Table 3)", "overall", "average"),
            ("Comparison", "comparison", "comparison"),
            ("Recognition", "recognition", "recognition"),
        ):
            lines += [f"## {title}", "", header, rule]
            for model, block in models.items():
                t = block["table"]
                cells = [printed(t["attributes"][a][key]) for a in ATTRIBUTES]
                lines.append(f"| {model} | " + " | ".join(cells) + f" | {printed(t[average])} |")
            lines.append("")
        parsers = sorted({p for block in models.values() for p in block["accuracy_by_parser"]})
        lines += [
            "## Answers",
            "",
            "| Model | answered | abstained | errors | coverage (>= 0.60) | share A | "
            + " | ".join(f"accuracy ({p})" for p in parsers)
            + " |",
            "|---" * (6 + len(parsers)) + "|",
        ]
        for model, block in models.items():
            lines.append(
                f"| {model} | {block['n']} | {block['abstained']} | {block['errors']} | {block['table']['coverage']} | "
                f"{printed(block['answer_rate'].get('A', 0.0))} | "
                + " | ".join(printed(block["accuracy_by_parser"][p], 3) for p in parsers)
                + " |"
            )
        return "\n".join(lines) + "\n"
