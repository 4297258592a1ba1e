#!/usr/bin/env bash
# The real-model GRPO comparison on one NVIDIA GPU: our DeepSpeed trainer, then TRL's
# GRPOTrainer for the same number of updates, both generating with transformers on the GPU
# (the same engine on both sides; plain vLLM is not needed) and both evaluated greedily on the
# same 200 held-out tasks. Settings are configs/math_smollm2_grpo_fast.yaml's.
#
#   bash scripts/gpu_real_model.sh [OURS_WALL_S] [TRL_WALL_S]
#
# Needs the train and trl extras and a CUDA torch. DEVICE=cpu and RLLM_OVERRIDES="model=tiny ..."
# make a dry run on a machine without a GPU; on a copy of the tree whose .git is missing or
# stale, set RLLM_COMMIT to the commit it holds. Writes
# benchmarks/results/real_model_{rl,trl}_gpu.json and docs/real_model/real_model_rl_gpu.png,
# and copies them (with both logs) to $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
ours_wall=${1:-140}
trl_wall=${2:-170}
device=${DEVICE:-cuda}
export DS_ACCELERATOR=$device PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
results=benchmarks/results
config=(--config configs/math_smollm2_grpo_fast.yaml)
# shellcheck disable=SC2206  # the overrides are words
gpu=(rollout.backend=transformers "rollout.engine_kwargs={device: $device}" train.output_dir=runs/gpu
    ${RLLM_OVERRIDES:-})
logs=${OUT:-runs}
mkdir -p "$logs"

${PYTHON:-python3} -m benchmarks.real_model_rl "${config[@]}" --out "$results/real_model_rl_gpu.json" \
    "${gpu[@]}" "train.max_wall_s=$ours_wall" 2>&1 | grep -v -E "Loading weights|Writing model" \
    | tee "$logs/ours.log"
# TRL does as many updates as ours did (40 if ours failed), and stops at its own wall limit.
updates=$(${PYTHON:-python3} -c 'import json, sys; print(json.load(open(sys.argv[1]))["training"]["updates"] or 40)' \
    "$results/real_model_rl_gpu.json" 2>/dev/null || echo 40)
${PYTHON:-python3} -m benchmarks.real_model_trl "${config[@]}" --ours "$results/real_model_rl_gpu.json" \
    --updates "$updates" --out "$results/real_model_trl_gpu.json" --max-wall-s "$trl_wall" "${gpu[@]}" 2>&1 \
    | grep -v -E "Loading weights|Writing model" | tee "$logs/trl.log"

if [ -n "${OUT:-}" ]; then
    cp "$results"/real_model_rl_gpu.json "$results"/real_model_trl_gpu.json \
        docs/real_model/real_model_rl_gpu.png "$OUT"/ 2>/dev/null
fi
ls -la "$results"/real_model_*_gpu.json
