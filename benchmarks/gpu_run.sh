#!/usr/bin/env bash
# The GPU measurements the figures page's "end to end" rows come from, in one call on one GPU machine:
#   bash benchmarks/gpu_run.sh OUT_DIR [--with-full-sft]
# The AV judge end to end at batch 8 and 32, decoding in threads and in processes, then its LoRA steps; with
# --with-full-sft also benchmarks/real_size_training.py (ZeRO-2, ZeRO-3, ZeRO-3 offloaded: about 4 minutes more).
# Wheels of the pinned packages the machine lacks (transformers, peft, av; deepspeed and its needs) may wait in
# .whl/; they are installed to /tmp/site first. Nothing here runs in CI.
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
# 6 threads decode, then 12 processes do for 12 threads (the LoRA steps follow that run)
python3 benchmarks/real_size_judges.py --families qwen2_5_omni --end-to-end --batch-sizes 8,32 --workers 6 \
  --no-train --out "$out/end_to_end_threads.json" 2>&1 | tee "$out/end_to_end_threads.log" | grep -E "clips/s|stage|vs CPU"
python3 benchmarks/real_size_judges.py --families qwen2_5_omni --end-to-end --batch-sizes 8,32 --workers 12 \
  --decode-processes 12 --train-batch-sizes 1,4,8 --steps 2 --out "$out/end_to_end_processes.json" 2>&1 \
  | tee "$out/end_to_end_processes.log" | grep -E "clips/s|stage|vs CPU|train"
if [ "${2:-}" = "--with-full-sft" ]; then
  python3 benchmarks/real_size_training.py --timeout 170 --out "$out/training.json" 2>&1 | tee "$out/training.log" | tail -5
fi
