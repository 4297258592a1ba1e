#!/usr/bin/env bash
# Create the dedicated, unprivileged system user that sandboxed code runs as (idempotent).
#   sudo bash scripts/setup_sandbox_user.sh            # user `rllm-sandbox`
#   RLLM_SANDBOX_USER=name sudo bash scripts/setup_sandbox_user.sh
# Why: as root, the kernel ignores the process-count limit (a fork bomb gets through), and
# firejail refuses `nobody`; a real system account with no home, no shell and no groups is
# what rllm_envs.sandbox switches to when it runs as root. Non-root users need nothing: code
# then runs as the calling user, inside the sandbox.
set -euo pipefail
NAME="${RLLM_SANDBOX_USER:-rllm-sandbox}"

if [ "$(id -u)" != "0" ]; then
  echo "[sandbox-user] not root: skipped (sandboxed code runs as $(id -un))"
  exit 0
fi
if id -u "$NAME" >/dev/null 2>&1; then
  echo "[sandbox-user] $NAME exists (uid $(id -u "$NAME"))"
  exit 0
fi
nologin="$(command -v nologin || echo /usr/sbin/nologin)"
useradd --system --user-group --no-create-home --home-dir /nonexistent \
  --shell "$nologin" --comment "rllm-envs sandboxed code" "$NAME"
echo "[sandbox-user] created $NAME (uid $(id -u "$NAME"))"
