#!/usr/bin/env bash
# Build avjudge's wheel, install it into a clean virtual environment outside the checkout, and run, from an empty
# folder, what a new user runs first: the checkpoint list, the quick demo, and one score on a clip the demo made.
# Usage: bash scripts/wheel_smoke.sh [PYTHON]   (PYTHON: one with `build` installed; default python3)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m build --wheel --outdir "$work/dist" "$repo" >/dev/null
wheel=$(ls "$work"/dist/avjudge-*.whl)
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --upgrade pip
"$work/venv/bin/pip" install -q -c "$repo/constraints.txt" "$wheel[judges,train,perturb,report]"
cd "$work"
mkdir run && cd run
export HF_HUB_OFFLINE=1 WANDB_MODE=offline AVJUDGE_CACHE="$work/cache"
avjudge="$work/venv/bin/avjudge"
"$avjudge" --version
"$avjudge" checkpoints list | grep -q "nisqa:"
"$avjudge" demo --quick --judges av --out demo >/dev/null
test -s demo/demo_report.html
clip=$(ls demo/world/clips/*.mp4 | head -n 1)
"$avjudge" score --judge av=demo/train/av/final --input "$clip" --out score.jsonl --no-progress >/dev/null
"$work/venv/bin/python" - <<'PY'
import json
rows = [json.loads(line) for line in open("score.jsonl")]
assert len(rows) == 1 and rows[0].get("error") is None and 0.0 <= rows[0]["score"] <= 1.0, rows
import avjudge
assert "site-packages" in avjudge.__file__, avjudge.__file__  # the wheel's package, not the checkout's
print(f"wheel smoke run: ok (score {rows[0]['score']:.3f} from {avjudge.__file__})")
PY
