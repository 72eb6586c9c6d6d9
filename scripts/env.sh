# shellcheck shell=bash
# Environment for working in this repository: `source scripts/env.sh` (scripts/setup.sh first).
# Everything points at this checkout's .venv and .cache, and at the machine cache in
# ${PDSERVE_CACHE:-/var/cache/pdserve}; nothing here reaches beyond loopback.
PDSERVE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PDSERVE_ROOT
export PDSERVE_CACHE=${PDSERVE_CACHE:-/var/cache/pdserve}
# Hard open-files limit of this machine: containers ask for exactly this (see containers.conf).
PDSERVE_NOFILE=$(ulimit -Hn)
export PDSERVE_NOFILE
export PATH="$PDSERVE_ROOT/.venv/bin:$PATH"
export VIRTUAL_ENV="$PDSERVE_ROOT/.venv"
# Podman: runc + explicit ulimits (rendered by setup.sh from tests/platform/containers.conf.in).
export CONTAINERS_CONF="$PDSERVE_ROOT/.cache/containers.conf"
# This collection (through the pdserve/sglang link) and the ones unpacked from the ansible bundle.
export ANSIBLE_COLLECTIONS_PATH="$PDSERVE_ROOT/.cache/collections"
export ANSIBLE_FORCE_COLOR=0
export ANSIBLE_NOCOLOR=1
export PY_COLORS=0
export NO_COLOR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The router (and anything using huggingface_hub) must never fetch from the Hub in tests.
export HF_ENDPOINT=http://127.0.0.1:9
export HF_HUB_OFFLINE=1
