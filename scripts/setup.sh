#!/usr/bin/env bash
# Set up everything the demo and the tests need, on Debian 12 (or a close Ubuntu) as root.
# Idempotent: each step checks first and does nothing when its result is already in place.
#
#   apt packages   podman, runc, iptables, debootstrap, numactl, ... (apt-get update only when one is missing)
#   .venv          from requirements.lock (every package pinned with its hashes; bash scripts/lock.sh writes it
#                  from requirements.txt); pip runs only when the lock's hash changed
#   collections    containers.podman, ansible.posix, community.general unpacked from PyPI's
#                  ansible==ANSIBLE_BUNDLE_VERSION into .cache/collections, plus the link
#                  .cache/collections/ansible_collections/pdserve/sglang -> the repository root
#   podman         .cache/containers.conf (runc, ulimits this machine allows)
#   test image     localhost/pdserve-systemd:bookworm (tests/platform/build-image.sh)
#   apt repos      signed local apt repositories of the nvidia_driver scenario (tests/platform/apt_driver_repo.py)
#   wheelhouse     scripts/wheelhouse.sh, when present, then the test inventories' locks of its exact files
#                  (bash scripts/lock.sh --wheelhouse, into $PDSERVE_CACHE/wheelhouse-locks)
#   apt-monitoring scripts/apt-monitoring.sh: Debian's Prometheus, node exporter and Alertmanager as a
#                  local apt repository in the machine cache, promtool/amtool unpacked from it
#
# Machine-level caches live in ${PDSERVE_CACHE:-/var/cache/pdserve} and survive fresh clones.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PDSERVE_CACHE=${PDSERVE_CACHE:-/var/cache/pdserve}
ANSIBLE_BUNDLE_VERSION=12.3.0
# The bundle wheel's hash (PyPI's ansible-12.3.0-py3-none-any.whl): pip download refuses any other file.
ANSIBLE_BUNDLE_SHA256=cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414
BUNDLE_COLLECTIONS=(containers/podman ansible/posix community/general community/crypto)
# iptables: netavark's firewall driver needs it for any podman network other than none (without
# it a container on a network fails with "netavark (exit code 1): No such file or directory").
# openssh-client: Ansible reaches the multi-host test stand over SSH.
APT_PACKAGES=(shellcheck podman runc netavark aardvark-dns iptables openssh-client debootstrap numactl rsync git
  ca-certificates python3 python3-venv dpkg-dev gnupg debian-archive-keyring)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }
start=$SECONDS

# --- apt packages -------------------------------------------------------------------------------
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  # No pipe into grep -q: under pipefail its early exit can SIGPIPE dpkg-query and fake a miss.
  [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) == 'install ok installed' ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] || die "missing apt packages (${missing[*]}); run this script as root"
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # With recommends: podman's helpers (catatonit, slirp4netns, ...) come along.
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  say "apt packages present"
fi

# --- Python virtual environment -----------------------------------------------------------------
mkdir -p .cache "$PDSERVE_CACHE"/{images,wheelhouse,ansible-bundle}
python=${PDSERVE_PYTHON:-$(command -v python3.11 || command -v python3)}
# requirements.lock is resolved for CPython 3.11 (scripts/lock.py, TOOLCHAIN_PYTHON): wheels of another Python have
# other hashes.
if [[ ! -x .venv/bin/python ]]; then
  "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || die "$python is not Python 3.11, which requirements.lock is for (set PDSERVE_PYTHON to a python3.11)"
  say "creating .venv with $("$python" --version)"
  "$python" -m venv .venv
fi
.venv/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || die ".venv is not Python 3.11, which requirements.lock is for (remove .venv and set PDSERVE_PYTHON to a python3.11)"
req_hash=$(sha256sum requirements.lock | cut -d' ' -f1)
if [[ $(cat .venv/.requirements.sha256 2>/dev/null) != "$req_hash" ]]; then
  say "pip install --require-hashes --no-deps -r requirements.lock"
  .venv/bin/python -m pip install -qq --disable-pip-version-check --require-hashes --no-deps -r requirements.lock
  echo "$req_hash" >.venv/.requirements.sha256
else
  say ".venv matches requirements.lock"
fi

# --- Ansible collections from PyPI's ansible bundle (Galaxy is not reachable) -------------------
coll_root=.cache/collections/ansible_collections
stamp=.cache/collections/.bundle-$ANSIBLE_BUNDLE_VERSION-$(printf '%s,' "${BUNDLE_COLLECTIONS[@]}" | sha256sum | cut -c1-8)
if [[ ! -e $stamp ]]; then
  bundle_dir=$PDSERVE_CACHE/ansible-bundle
  # compgen, not `find | head`: a pipe that ends early fails under pipefail (SIGPIPE).
  wheel=$(compgen -G "$bundle_dir/ansible-$ANSIBLE_BUNDLE_VERSION-*.whl" || true)
  wheel=${wheel%%$'\n'*}
  # A file already in the machine cache counts only with the pinned hash.
  if [[ -n $wheel && $(sha256sum "$wheel" | cut -d' ' -f1) != "$ANSIBLE_BUNDLE_SHA256" ]]; then
    say "$(basename "$wheel") does not have the pinned hash: downloading it again"
    rm -f "$wheel"
    wheel=
  fi
  if [[ -z $wheel ]]; then
    say "pip download ansible==$ANSIBLE_BUNDLE_VERSION (about 54 MB, once per machine)"
    .venv/bin/python -m pip download -qq --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
      -d "$bundle_dir" -r <(printf 'ansible==%s --hash=sha256:%s\n' "$ANSIBLE_BUNDLE_VERSION" "$ANSIBLE_BUNDLE_SHA256")
    wheel=$(compgen -G "$bundle_dir/ansible-$ANSIBLE_BUNDLE_VERSION-*.whl")
    wheel=${wheel%%$'\n'*}
  fi
  say "unpacking ${BUNDLE_COLLECTIONS[*]} from $(basename "$wheel")"
  for c in "${BUNDLE_COLLECTIONS[@]}"; do rm -rf "${coll_root:?}/$c"; done
  .venv/bin/python - "$wheel" "$coll_root" "${BUNDLE_COLLECTIONS[@]}" <<'PY'
import sys, zipfile
from pathlib import Path

wheel, dest, *wanted = sys.argv[1:]
prefixes = tuple(f"ansible_collections/{c}/" for c in wanted)
found = set()
with zipfile.ZipFile(wheel) as zf:
    for info in zf.infolist():
        if info.filename.startswith(prefixes) and not info.is_dir():
            rel = Path(info.filename).relative_to("ansible_collections")
            target = Path(dest) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            found.add("/".join(rel.parts[:2]))
missing = set(wanted) - found
if missing:
    sys.exit(f"not in {wheel}: {sorted(missing)}")
PY
  rm -f .cache/collections/.bundle-*
  touch "$stamp"
else
  say "collections present (ansible $ANSIBLE_BUNDLE_VERSION bundle)"
fi
mkdir -p "$coll_root/pdserve"
if [[ $(readlink "$coll_root/pdserve/sglang" 2>/dev/null) != ../../../.. ]]; then
  rm -rf "$coll_root/pdserve/sglang"
  ln -s ../../../.. "$coll_root/pdserve/sglang"
  say "linked $coll_root/pdserve/sglang -> repository root"
fi

# --- podman configuration and the systemd test image --------------------------------------------
sed "s/@NOFILE@/$(ulimit -Hn)/g" tests/platform/containers.conf.in >.cache/containers.conf.new
if cmp -s .cache/containers.conf.new .cache/containers.conf; then
  rm .cache/containers.conf.new
else
  mv .cache/containers.conf.new .cache/containers.conf
  say "wrote .cache/containers.conf (runc, nofile=$(ulimit -Hn))"
fi
export CONTAINERS_CONF=$ROOT/.cache/containers.conf PDSERVE_CACHE
bash tests/platform/build-image.sh

# --- signed local apt repositories for the nvidia_driver scenario (stand-in driver packages) ------
python3 tests/platform/apt_driver_repo.py

# --- wheelhouse for containers and air-gapped hosts ---------------------------------------------
if [[ -f scripts/wheelhouse.sh ]]; then
  bash scripts/wheelhouse.sh
  # The scenarios install from the wheelhouse with --require-hashes: locks of the files this machine downloaded.
  bash scripts/lock.sh --wheelhouse
fi

# --- NIXL and CPU torch unpacked for the KV fabric check on the GPU-less stands (mounted read-only at
# /opt/pdserve/kv-fabric-site; the emulated servers' venvs have neither) and the probe's integration test -----------
fabric_site=$PDSERVE_CACHE/kv-fabric-site
fabric_pins="nixl==1.3.0 torch==2.13.0+cpu numpy==2.3.5"
if [[ "$(cat "$fabric_site/.pdserve-pins" 2>/dev/null)" != "$fabric_pins" ]]; then
  rm -rf "$fabric_site" "$fabric_site.partial"
  # shellcheck disable=SC2086  # the pins are words
  python3 -m pip install -q --no-index --find-links "$PDSERVE_CACHE/wheelhouse" --no-compile \
    --target "$fabric_site.partial" $fabric_pins
  echo "$fabric_pins" >"$fabric_site.partial/.pdserve-pins"
  chmod -R a+rX "$fabric_site.partial"
  mv "$fabric_site.partial" "$fabric_site"
  say "kv-fabric-site: $fabric_pins unpacked into $fabric_site"
fi

# --- Debian's monitoring packages as a local repository (molecule monitoring, promtool tests) ----
bash scripts/apt-monitoring.sh

say "ready in $((SECONDS - start)) s (use: source scripts/env.sh)"
