#!/usr/bin/env bash
# nvidia_driver verify-only on the real H200 device machine (run there from the repository root):
#   OUT=/some/dir bash tests/device/driver_verify_only.sh [extra ansible-playbook arguments]
# Needs ansible-playbook on PATH and this collection importable (ANSIBLE_COLLECTIONS_PATH, default
# <repo>/.cache/collections with the pdserve/sglang link scripts/setup.sh makes). Changes nothing on the
# machine. Writes $OUT/verify-only/{pass,wrong_gpu_count,wrong_compute_capability}.json (the module's
# results) and ansible.log; exits non-zero when a case did not pass or fail as it must.
# Copy the JSON files to tests/unit/fixtures/gpu/h200x1_driver/verify-only/ for the replay test.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${OUT:?set OUT to the directory the results go to}"
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$ROOT/.cache/collections}
# ansible-core refuses a non-UTF-8 locale; minimal VMs often set none.
export LC_ALL=${LC_ALL:-C.UTF-8}
export ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 OUT
mkdir -p "$OUT/verify-only"
cd "$ROOT" || exit 1
{
  echo "host: $(uname -n) $(uname -r); $(ansible-playbook --version | head -n 1); $(command -v nvidia-smi || echo 'nvidia-smi not on PATH')"
  ansible-playbook -i localhost, -c local tests/device/driver_verify_only.yml "$@"
} >"$OUT/verify-only/ansible.log" 2>&1
rc=$?
tail -n 25 "$OUT/verify-only/ansible.log"
exit "$rc"
