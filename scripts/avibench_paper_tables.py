"""Write AVI-Bench's Table 3 (14 task scores of 28 models) and Table 5 (their four levels) as JSON, read from the
paper's text (`../shared/seeds/000_*.txt`). The levels test computes Table 5 from Table 3; rerun to regenerate:

    python scripts/avibench_paper_tables.py ../shared/seeds/000_85d1917d967681d4.txt tests/data/avibench_paper.json

Models are keyed by lower-case name and parameter count ("pandagpt 7b"); Table 5 prints two of them differently
from Table 3 ("X-Instruct-BLIP", and Qwen-Omni-turbo with no parameter count), which are matched by name.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from avjudge.omni.benchmarks.avibench.levels import PRISE, STAGES

TABLE3_COLUMNS = [
    *STAGES["perception"],
    "P",
    *STAGES["understanding"],
    "U",
    *STAGES["reasoning"],
    "R",
    *PRISE,
    "PS",
    "avg",
]
NUMBER = re.compile(r"\d+\.\d\d")


def key(name: str, params: str) -> str:
    return f"{name} {params}".lower()


def table3(lines: list[str]) -> dict:
    start = next(i for i, line in enumerate(lines) if line.startswith("Table 3: Evaluation results of AVI-Bench"))
    rows = {}
    for line in lines[start + 3 :]:
        tokens = line.split()
        if len(tokens) < len(TABLE3_COLUMNS) + 2 or not all(
            NUMBER.fullmatch(t) for t in tokens[-len(TABLE3_COLUMNS) :]
        ):
            break
        figures = [float(t) for t in tokens[-len(TABLE3_COLUMNS) :]]
        name, params = " ".join(tokens[: -len(TABLE3_COLUMNS) - 1]), tokens[-len(TABLE3_COLUMNS) - 1]
        rows[key(name, params)] = {
            c: v for c, v in zip(TABLE3_COLUMNS, figures) if c not in ("P", "U", "R", "PS", "avg")
        }
    return rows


def by_name(keys: set[str]) -> dict[str, str]:
    """Key by name alone, for the models Table 5 prints with another parameter count."""
    return {k.rsplit(" ", 1)[0]: k for k in keys}


def table5(lines: list[str], keys: set[str]) -> dict:
    start = next(i for i, line in enumerate(lines) if line.startswith("Table 5: Comparison of 28 Omni-MLLMs"))
    rows = {}
    for line in lines[start + 2 : start + 16]:
        tokens = line.split()
        numbers = [i for i, t in enumerate(tokens) if NUMBER.fullmatch(t)]
        for begin, figures in ((0, numbers[:4]), (numbers[3] + 1, numbers[4:])):
            label = tokens[begin : figures[0]]
            name = " ".join(label[:-1]).lower()
            found = key(" ".join(label[:-1]), label[-1])
            rows[found if found in keys else by_name(keys)[name]] = dict(
                zip(("L1", "L2", "L3", "L4"), (float(tokens[i]) for i in figures))
            )
    return rows


def main(paper: Path, out: Path) -> None:
    lines = paper.read_text().splitlines()
    scores = table3(lines)
    result = {"table3": scores, "table5": table5(lines, set(scores))}
    if len(scores) != 28 or set(result["table5"]) != set(scores):
        sys.exit(
            f"{paper}: expected the same 28 models in Tables 3 and 5; found {len(scores)} and {len(result['table5'])}"
        )
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}: 28 models, their task scores and levels")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
