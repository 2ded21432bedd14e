#!/usr/bin/env bash
# Build avjudge's wheel, install it into a clean virtual environment outside the checkout, and run, from an empty
# folder, what a new user runs first: the checkpoint list, the quick demo, and one score on a clip the demo made; the
# shipped recipes, training configs and checkpoint manifest must come from inside the installed wheel. Then the base
# install alone (no extras: no torch) scores multiple-choice answers with `avjudge omni score`.
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
from avjudge.resources import asset, resolve
# the repository's top-level folders, mapped into the wheel by the build: shipped names resolve inside it
for value, kind in (("world_demo", "recipe"), ("tiny_world_av", "train_config"), ("zero2", "deepspeed")):
    path = resolve(value, kind)
    assert "site-packages" in str(path) and "avjudge/shipped/" in str(path), path
assert asset("checkpoints", "manifest.yaml").is_file() and asset("checkpoints", "tiny").is_dir()
# both tiny encoder files ship: the demo's AV judge starts from the ones that keep time, and its judge has an adapter
assert asset("checkpoints", "tiny", "qwen2_5_omni_sync_encoders.safetensors").is_file()
assert json.load(open("demo/train/av/final/config.json"))["sync_adapter"]["placeholder"] == "<|IMAGE|>"
print(f"wheel smoke run: ok (score {rows[0]['score']:.3f} from {avjudge.__file__})")
PY

# the base install: `omni score` needs no model code
python3 -m venv "$work/base"
"$work/base/bin/pip" install -q --upgrade pip
"$work/base/bin/pip" install -q -c "$repo/constraints.txt" "$wheel"
cat > questions.jsonl <<'JSONL'
{"id": "q1", "media": "a.mp4", "question": "Which?", "options": ["x", "y"], "answer": "A", "category": "c"}
{"id": "q2", "media": "b.mp4", "question": "Which?", "options": ["x", "y"], "answer": "B", "category": "c"}
JSONL
printf '%s\n' '{"id": "q1", "model": "m", "response": "A"}' '{"id": "q2", "model": "m", "response": "A"}' > answers.jsonl
"$work/base/bin/avjudge" omni score --suite questions --input answers.jsonl --questions questions.jsonl --out omni >/dev/null
"$work/base/bin/python" - <<'PY'
import importlib.util
import json
assert importlib.util.find_spec("torch") is None, "the base install has no torch"
report = json.load(open("omni/report.json"))
assert report["models"]["m"]["accuracy"] == 0.5 and report["chance"]["all"] == 0.5, report
print("base install: omni score ok, without torch")
PY
