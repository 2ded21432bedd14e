#!/usr/bin/env bash
# The GPU measurements the figures page's "end to end" rows come from, on one GPU machine:
#   bash benchmarks/gpu_run.sh OUT_DIR [STEP ...]
# Steps (default: pipeline threads processes variants), each one benchmark run, so that a device call of at most 10
# minutes can take one or two of them:
#   pipeline   the AV judge end to end at batch 8 with default settings: `avjudge score`'s job ("job" line: decoding
#              processes beside the model, shared memory, a bounded queue) beside each stage alone (about 3 minutes)
#   threads    the AV judge end to end at batch 8 and 32, 6 decoding threads (about 3 minutes)
#   processes  the same, 12 threads handing decoding to 12 processes, then its LoRA steps (about 3 minutes)
#   variants   batch 8 as released, with its MLP widths aligned to 8 and with its blocks compiled too (about 4
#              minutes, most of it compiling)
#   full-sft   benchmarks/real_size_training.py: ZeRO-2, ZeRO-3, ZeRO-3 offloaded (about 4 minutes)
# Wheels of the pinned packages the machine lacks (transformers, peft, av; deepspeed and its needs) may wait in
# .whl/; they are installed to /tmp/site first. Nothing here runs in CI.
set -uo pipefail
out=${1:-gpu_results}
shift || true
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(pipeline threads processes variants)
for step in "${steps[@]}"; do
  case $step in
    pipeline | threads | processes | variants | full-sft) ;;
    *) echo "unknown step $step: pipeline, threads, processes, variants or full-sft" >&2 && exit 2 ;;
  esac
done
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers, av; print('torch', torch.__version__, 'transformers', transformers.__version__, 'av', av.__version__)"
e2e=(python3 benchmarks/real_size_judges.py --families qwen2_5_omni --end-to-end)
shown="clips/s|stage|vs CPU|train|forward|job"
for step in "${steps[@]}"; do
  echo "== $step ($(date +%T))"
  case $step in
    pipeline)
      "${e2e[@]}" --batch-sizes 8 --no-train --out "$out/end_to_end_pipeline.json" ;;
    threads)
      "${e2e[@]}" --batch-sizes 8,32 --workers 6 --no-train --out "$out/end_to_end_threads.json" ;;
    processes)
      "${e2e[@]}" --batch-sizes 8,32 --workers 12 --decode-processes 12 --train-batch-sizes 1,4,8 \
        --steps 2 --out "$out/end_to_end_processes.json" ;;
    variants)
      "${e2e[@]}" --batch-sizes 8 --workers 12 --decode-processes 12 --align-widths 8 --compile --no-train \
        --out "$out/end_to_end_variants.json" ;;
    full-sft)
      python3 benchmarks/real_size_training.py --timeout 170 --out "$out/training.json" ;;
  esac 2>&1 | tee "$out/$step.log" | grep -E "$shown|done|error|Error"
done
