#!/usr/bin/env bash
# Create the dedicated, unprivileged system users that sandboxed code runs as (idempotent).
#   sudo bash scripts/setup_sandbox_user.sh            # `rllm-sandbox` + `rllm-sandbox-0..255`
#   RLLM_SANDBOX_USER=name RLLM_SANDBOX_POOL=16 sudo bash scripts/setup_sandbox_user.sh
# Why: as root, the kernel ignores the process-count limit (a fork bomb gets through), and
# firejail refuses `nobody`; a real system account with no home, no shell and no groups is
# what rllm_envs.sandbox switches to when it runs as root. The pool `NAME-0`, `NAME-1`, ...
# gives each concurrent firejail sandbox a user of its own: the kernel counts processes per
# user, and sandboxes sharing one could count each other's (a channel between them; see
# rllm_envs/sandbox/uids.py). Non-root users need nothing: code then runs as the calling
# user, inside the sandbox.
set -euo pipefail
NAME="${RLLM_SANDBOX_USER:-rllm-sandbox}"
# One user per live sandbox (a sandbox waits when all are taken): room for 64 concurrent
# judges per judging process, the idle sandboxes of its pools, and a few processes.
POOL="${RLLM_SANDBOX_POOL:-256}"

if [ "$(id -u)" != "0" ]; then
  echo "[sandbox-user] not root: skipped (sandboxed code runs as $(id -un))"
  exit 0
fi
nologin="$(command -v nologin || echo /usr/sbin/nologin)"
if id -u "$NAME" >/dev/null 2>&1; then
  echo "[sandbox-user] $NAME exists (uid $(id -u "$NAME"))"
else
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell "$nologin" --comment "rllm-envs sandboxed code" "$NAME"
  echo "[sandbox-user] created $NAME (uid $(id -u "$NAME"))"
fi
# The pool shares the base user's group (the kernel counts processes by user, not group).
created=0
for ((i = 0; i < POOL; i++)); do
  if ! id -u "$NAME-$i" >/dev/null 2>&1; then
    useradd --system --no-user-group --gid "$NAME" --no-create-home --home-dir /nonexistent \
      --shell "$nologin" --comment "rllm-envs sandboxed code" "$NAME-$i"
    created=$((created + 1))
  fi
done
echo "[sandbox-user] pool $NAME-0..$((POOL - 1)): $created created"
