#!/usr/bin/env bash
# The GPU measurements of the figures page's "end to end" and "full SFT" rows, in one call on one GPU machine:
#   bash benchmarks/gpu_run.sh OUT_DIR
# Wheels of the pinned packages the machine lacks (transformers, peft, av, deepspeed and its needs) may wait in .whl/;
# they are installed to /tmp/site first. Nothing here runs in CI.
set -uo pipefail
out=${1:-gpu_results}
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers, av; print('torch', torch.__version__, 'transformers', transformers.__version__, 'av', av.__version__)"
python3 benchmarks/real_size_judges.py --families qwen2_5_omni --end-to-end --batch-sizes 8,32 --workers 14 \
  --train-batch-sizes 1,4,8 --steps 2 --out "$out/end_to_end.json" 2>&1 | tee "$out/end_to_end.log" | grep -v Warning
python3 benchmarks/real_size_training.py --timeout 170 --out "$out/training.json" 2>&1 | tee "$out/training.log" | tail -5
