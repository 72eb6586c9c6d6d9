#!/usr/bin/env bash
# The one command that writes every pip lock with hashes (README "Locked installs"):
#
#   bash scripts/lock.sh               # requirements.lock (the test tool chain, from requirements.txt) and the locks
#                                      # the collection ships (roles/sglang_install/files/locks/), from PyPI
#   bash scripts/lock.sh --wheelhouse  # the locks of the test inventories, of the exact files in the machine's
#                                      # wheelhouse (offline; scripts/setup.sh runs it after scripts/wheelhouse.sh)
#
# Run it after changing a pin: requirements.txt, sglang_install_version / sglang_router_version
# (roles/sglang_defaults), sglang_install_torch_packages / sglang_install_nixl_* (roles/sglang_install defaults).
# The resolver is uv (scripts/lock-tool.txt: pinned, installed with its hash into a private venv).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOL=${PDSERVE_LOCK_TOOL:-$ROOT/.cache/lock-tool}
die() { printf 'lock: ERROR: %s\n' "$*" >&2; exit 1; }

python=${PDSERVE_LOCK_PYTHON:-$(command -v python3.11 || command -v python3)} || die "no python3"
want=$(sha256sum "$ROOT/scripts/lock-tool.txt" | cut -d' ' -f1)
if [[ $(cat "$TOOL/.lock-tool.sha256" 2>/dev/null) != "$want" || ! -x $TOOL/bin/uv ]]; then
  rm -rf "$TOOL"
  "$python" -m venv "$TOOL"
  "$TOOL/bin/python" -m pip install -qq --disable-pip-version-check --require-hashes --no-deps \
    -r "$ROOT/scripts/lock-tool.txt"
  echo "$want" >"$TOOL/.lock-tool.sha256"
fi
export PDSERVE_UV=$TOOL/bin/uv
# --wheelhouse reads the test inventories (YAML): with the tool chain's Python, which has PyYAML.
runner=$TOOL/bin/python
if [[ " $* " == *" --wheelhouse "* && -x $ROOT/.venv/bin/python ]]; then runner=$ROOT/.venv/bin/python; fi
exec "$runner" "$ROOT/scripts/lock.py" "$@"
