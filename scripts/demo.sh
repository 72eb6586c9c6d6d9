#!/usr/bin/env bash
# The main job on this machine, no GPU needed: set up everything (scripts/setup.sh), create the
# local systemd container that stands in for a GPU host, then deploy the whole stack into it with
# the real playbook (`ansible-playbook site.yml -i inventories/local`): install layer from the
# wheelhouse, emulated prefill and decode units, the real router, and the validate play, which
# ends with the readiness and parser-validation summary.
# Usage: bash scripts/demo.sh [extra ansible-playbook args]    (remove: bash scripts/demo.sh --destroy)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
# shellcheck source=scripts/env.sh
source scripts/env.sh
PDSERVE_NOFILE=${PDSERVE_NOFILE:-$(ulimit -Hn)}
export PDSERVE_NOFILE
if [ "${1:-}" = "--destroy" ]; then
    exec ansible-playbook playbooks/local_container.yml -i inventories/local -e pdserve_local_state=absent
fi
ansible-playbook playbooks/local_container.yml -i inventories/local
exec ansible-playbook site.yml -i inventories/local "$@"
