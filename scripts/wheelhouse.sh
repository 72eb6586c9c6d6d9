#!/usr/bin/env bash
# Fill the machine's wheelhouse: cp311 manylinux x86_64 wheels that containers (network none) and
# air-gapped hosts install from with `pip install --no-index --find-links`. Tests mount it read-only
# at /opt/pdserve/wheelhouse; the sglang_install role installs from it when sglang_install_wheelhouse
# is set.
#
#   ${PDSERVE_WHEELHOUSE:-${PDSERVE_CACHE:-/var/cache/pdserve}/wheelhouse}
#
# Idempotent: a stamp holds the hash of the pin lists below; when it matches, nothing is fetched.
# Change a pin and the next run downloads what is missing (already present files are reused).
#
# Contents (all pinned):
#   router set    sglang-router, smg and the emulator's web stack at the versions of requirements.txt,
#                 with their dependencies. The serving roles and the local demo install these.
#   sglang set    sglang==SGLANG_VERSION without its dependencies, plus the dependency subset that
#                 `import sglang`, `sglang.srt.server_args` (the flag check) and
#                 `python -m sglang.launch_server --help` need, with a CPU build of torch in place of
#                 the pinned CUDA torch, and NIXL. This is what CI can install in a container in
#                 about a minute. The complete dependency set is about 4.1 GB (see --full).
#
# Usage: bash scripts/wheelhouse.sh [--force]
#        bash scripts/wheelhouse.sh --full   # also download the complete `sglang==SGLANG_VERSION`
#                                            # set into <wheelhouse>-full (measure it, or carry it to
#                                            # an air-gapped GPU host); never used by CI
#
# Needs a CPython 3.11 on x86_64 Linux with glibc >= 2.34 (Debian 12 is 2.36): pip resolves for the
# interpreter it runs on, and the test containers are Debian bookworm with Python 3.11.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PDSERVE_CACHE=${PDSERVE_CACHE:-/var/cache/pdserve}
WHEELHOUSE=${PDSERVE_WHEELHOUSE:-$PDSERVE_CACHE/wheelhouse}
SGLANG_VERSION=0.5.23

# CPU torch in place of the CUDA torch==2.14.1 that sglang pins: PyPI's Linux torch wheels are CUDA
# builds (torch + nvidia-* libraries: about 3 GB of the 4.1 GB). The +cpu wheel comes from the
# machine's pip find-links (/opt/wheels on these machines); set PDSERVE_WHEELHOUSE_TORCH to another
# requirement or a wheel file elsewhere.
TORCH=${PDSERVE_WHEELHOUSE_TORCH:-torch==2.13.0+cpu}

# The dependency subset of sglang, pinned to the versions a full `pip download sglang==0.5.23`
# resolves to (checked on 2026-11-30), found by importing until nothing was missing:
#   sglang.srt.server_args  numpy orjson psutil pybase64 requests triton packaging pillow starlette
#                           msgspec pydantic pyzmq tqdm ipython aiohttp (sglang/srt/utils/common.py
#                           imports triton and PIL at module level)
#   launch_server --help    + huggingface_hub
#   NIXL (transfer backend) nixl (+ nixl-cu12, nixl-cu13: ~95 MB); it imports and instantiates its
#                           bundled UCX backend on a CPU-only host
SGLANG_SUBSET=(
  "$TORCH"
  triton==3.8.0
  numpy==2.3.5
  orjson==3.13.0
  psutil==7.2.2
  pybase64==1.5.1
  requests==2.34.2
  packaging==26.4
  pillow==13.0.0
  msgspec==0.23.0
  pydantic==2.14.4
  pyzmq==27.3.0
  tqdm==4.70.1
  ipython==9.18.1
  aiohttp==3.14.5
  huggingface_hub==1.33.0
  setproctitle==1.3.8
  nixl==1.3.0
)

say() { printf 'wheelhouse: %s\n' "$*"; }
die() { printf 'wheelhouse: ERROR: %s\n' "$*" >&2; exit 1; }

# Router + emulator pins come from requirements.txt, so the host venv and the containers agree.
pin_of() {
  local line
  line=$(grep -m1 -iE "^$1==" "$ROOT/requirements.txt") || die "$1 is not pinned in requirements.txt"
  printf '%s\n' "${line%%[[:space:]#]*}"
}
ROUTER_SET=("$(pin_of sglang-router)" "$(pin_of smg)" "$(pin_of fastapi)" "$(pin_of uvicorn)" "$(pin_of prometheus-client)")

python=${PDSERVE_WHEELHOUSE_PYTHON:-}
if [[ -z $python ]]; then
  for candidate in "$ROOT/.venv/bin/python" python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python=$candidate; break; fi
  done
fi
[[ -n $python ]] || die "no Python found (set PDSERVE_WHEELHOUSE_PYTHON to a CPython 3.11)"
"$python" - <<'PY' || die "$python is not CPython 3.11 on x86_64 Linux with glibc >= 2.34: the wheels would not fit the bookworm containers (set PDSERVE_WHEELHOUSE_PYTHON)"
import platform, sys
ok = (sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
      and platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc"
      and tuple(int(x) for x in platform.libc_ver()[1].split(".")[:2]) >= (2, 34))
sys.exit(0 if ok else 1)
PY

pip_download() { "$python" -m pip download --disable-pip-version-check --progress-bar off -q "$@"; }

bytes_of() { du -sb "$1" | cut -f1; }
human() { numfmt --to=iec --suffix=B "$1"; }

full=false
force=false
for arg in "$@"; do
  case $arg in
    --full) full=true ;;
    --force) force=true ;;
    *) die "unknown argument $arg (use --full or --force)" ;;
  esac
done

stamp=$WHEELHOUSE/.pdserve-wheelhouse.stamp
want=$(printf '%s\n' "v1" "sglang==$SGLANG_VERSION" "${ROUTER_SET[@]}" "${SGLANG_SUBSET[@]}" | sha256sum | cut -c1-16)
mkdir -p "$WHEELHOUSE"

if [[ $force == false && $(cat "$stamp" 2>/dev/null) == "$want" ]]; then
  say "$WHEELHOUSE is complete for pin set $want ($(human "$(bytes_of "$WHEELHOUSE")"))"
else
  start=$SECONDS
  say "router set: ${ROUTER_SET[*]}"
  pip_download --only-binary=:all: -d "$WHEELHOUSE" "${ROUTER_SET[@]}"
  say "sglang==$SGLANG_VERSION without dependencies"
  pip_download --only-binary=:all: --no-deps -d "$WHEELHOUSE" "sglang==$SGLANG_VERSION"
  say "sglang dependency subset (CPU torch: $TORCH)"
  if ! pip_download --only-binary=:all: -d "$WHEELHOUSE" "${SGLANG_SUBSET[@]}"; then
    die "could not download the subset; if the failing requirement is $TORCH, this machine has no CPU torch wheel in pip's find-links: set PDSERVE_WHEELHOUSE_TORCH (e.g. to a torch-*+cpu wheel file)"
  fi
  # One environment for everything: check that the two sets resolve together offline.
  "$python" -m pip install --disable-pip-version-check --dry-run --ignore-installed -q --no-index \
    --find-links "$WHEELHOUSE" --report /dev/null "${ROUTER_SET[@]}" "${SGLANG_SUBSET[@]}" \
    || die "the wheelhouse does not resolve offline: ${ROUTER_SET[*]} ${SGLANG_SUBSET[*]}"
  (cd "$WHEELHOUSE" && find . -maxdepth 1 -name '*.whl' -printf '%s %f\n' | sort -k2 >.pdserve-wheelhouse.manifest)
  echo "$want" >"$stamp"
  say "filled $WHEELHOUSE in $((SECONDS - start)) s: $(find "$WHEELHOUSE" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(human "$(bytes_of "$WHEELHOUSE")")"
fi

if [[ $full == true ]]; then
  full_dir=$WHEELHOUSE-full
  full_stamp=$full_dir/.pdserve-wheelhouse.stamp
  if [[ $force == false && $(cat "$full_stamp" 2>/dev/null) == "sglang==$SGLANG_VERSION" ]]; then
    say "$full_dir is complete ($(human "$(bytes_of "$full_dir")"))"
  else
    mkdir -p "$full_dir"
    start=$SECONDS
    say "complete sglang==$SGLANG_VERSION with every dependency into $full_dir (about 4.1 GB)"
    pip_download -d "$full_dir" "sglang==$SGLANG_VERSION" "${ROUTER_SET[@]}"
    echo "sglang==$SGLANG_VERSION" >"$full_stamp"
    say "downloaded in $((SECONDS - start)) s: $(find "$full_dir" -maxdepth 1 -type f -name '*.whl' | wc -l) wheels, $(human "$(bytes_of "$full_dir")")"
  fi
fi
