"""Write the SonicBench paper's printed accuracy tables as JSON, keyed by the release's model folders.

The tables are Table 3 (both paradigms per attribute, and the average) and the appendix's comparison and
recognition tables, read from the paper's text (`../shared/seeds/003_*.txt`). The test that scores the released
predictions compares with this file; rerun to regenerate it:

    python scripts/sonicbench_paper_tables.py ../shared/seeds/003_16cf5745d8127887.txt tests/data/sonicbench_paper.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from avjudge.omni.benchmarks.sonicbench.suite import ATTRIBUTES, PAPER_NAMES

TABLE_START = "Models Spectral & Amplitude"
FAMILY_HEADINGS = (
    "Large Audio Language Models (LALMs)",
    "Large Audio Reasoning Models (LARMs)",
    "Omni Language Models (OLMs)",
)
ALIASES = {"MiMo-Audio-Instruct": "MiMo-Audio"}  # the appendix names one model differently from Table 3
COLUMNS = len(ATTRIBUTES) + 1  # the attributes and the average


def parse_table(line: str) -> dict[str, list[float]]:
    """Model name -> its printed figures, from one flattened table line."""
    rows, name = {}, []
    tokens = line.split("Avg.", 1)[1].split()
    i = 0
    while i < len(tokens):
        if re.fullmatch(r"\d\.\d\d", tokens[i]):
            model = " ".join(name)
            for heading in FAMILY_HEADINGS:
                model = model.replace(heading, "").strip()
            rows[ALIASES.get(model, model)] = [float(t) for t in tokens[i : i + COLUMNS]]
            name, i = [], i + COLUMNS
        else:
            name.append(tokens[i])
            i += 1
    return rows


def main(paper: Path, out: Path) -> None:
    tables = [parse_table(line) for line in paper.read_text().splitlines() if line.startswith(TABLE_START)]
    if len(tables) != 3:
        sys.exit(f"{paper}: expected 3 SonicBench tables (overall, comparison, recognition), found {len(tables)}")
    folders = {paper_name: folder for folder, paper_name in PAPER_NAMES.items()}
    result = {}
    for key, table in zip(("overall", "comparison", "recognition"), tables):
        result[key] = {
            folders[name]: dict(zip([*ATTRIBUTES, "average"], figures))
            for name, figures in table.items()
            if name in folders
        }
        if len(result[key]) != len(PAPER_NAMES):
            sys.exit(f"{paper}: the {key} table names {sorted(set(folders) - set(table))} nowhere")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}: {len(PAPER_NAMES)} models x 3 tables")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
