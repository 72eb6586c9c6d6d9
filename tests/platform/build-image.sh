#!/usr/bin/env bash
# Build the systemd test image localhost/pdserve-systemd:bookworm from Debian packages.
#
# The root filesystem comes from debootstrap (no registry needed) and is cached as a tarball in
# ${PDSERVE_CACHE}/images/, so a fresh clone on the same machine only re-imports it (seconds).
# The tarball name and the image label carry a hash of this recipe: change the package list and
# the next run builds a new one.
#
# Usage: bash tests/platform/build-image.sh [--force]
set -euo pipefail

PDSERVE_CACHE=${PDSERVE_CACHE:-/var/cache/pdserve}
IMAGE=${PDSERVE_IMAGE:-localhost/pdserve-systemd:bookworm}
SUITE=bookworm
MIRROR=${PDSERVE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=systemd,systemd-sysv,dbus,python3,python3-venv,sudo,iproute2,procps,numactl,ca-certificates,openssh-server

recipe=$(printf '%s\n' "$SUITE" "$PACKAGES" "$(sed -n '/^# recipe-begin/,/^# recipe-end/p' "$0")" \
  | sha256sum | cut -c1-12)
tarball="$PDSERVE_CACHE/images/pdserve-systemd-$SUITE-$recipe.tar.gz"
force=${1:-}

say() { printf 'build-image: %s\n' "$*"; }

if [[ $force != --force ]] && podman image exists "$IMAGE" \
  && [[ $(podman image inspect --format '{{ index .Config.Labels "pdserve.recipe" }}' "$IMAGE") == "$recipe" ]]; then
  say "$IMAGE is up to date (recipe $recipe)"
  exit 0
fi

mkdir -p "$PDSERVE_CACHE/images"
if [[ $force == --force || ! -s $tarball ]]; then
  command -v debootstrap >/dev/null || { say "debootstrap is missing (run scripts/setup.sh)"; exit 1; }
  work=$(mktemp -d "$PDSERVE_CACHE/images/build.XXXXXX")
  rootfs="$work/rootfs"
  cleanup() {
    # debootstrap mounts /proc and /sys inside the target; never delete through a mount.
    local mounts
    mounts=$(findmnt -rn -o TARGET) || return 0
    printf '%s\n' "$mounts" | awk -v root="$rootfs/" 'index($0, root) == 1' | sort -r | xargs -r umount -l || true
    rm -rf --one-file-system "$work"
  }
  trap cleanup EXIT
  say "debootstrap $SUITE (minbase + $PACKAGES) from $MIRROR (about a minute)"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log"; exit 1; }
# recipe-begin (changes between these markers rebuild the image)
  # Smaller image: no package lists, caches, docs or man pages.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
    "$rootfs"/usr/share/info/*
  # Each container gets its own machine id at boot.
  : >"$rootfs/etc/machine-id"
  rm -f "$rootfs/var/lib/dbus/machine-id"
  # Units that have nothing to do in a container and only slow the boot or degrade it.
  for unit in getty.target systemd-remount-fs.service apt-daily.timer apt-daily-upgrade.timer \
    e2scrub_all.timer fstrim.timer; do
    ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
  done
  # sshd only where a scenario enables it (scenarios assert the exact set of listening sockets):
  # disabled, and without host keys (each container makes its own when a scenario enables it,
  # tests/platform/ssh_stand.py). No loginuid in a container without CAP_AUDIT_CONTROL: a
  # required pam_loginuid would refuse every SSH session.
  rm -f "$rootfs"/etc/systemd/system/multi-user.target.wants/ssh.service \
    "$rootfs"/etc/systemd/system/sockets.target.wants/ssh.socket \
    "$rootfs"/etc/systemd/system/sshd.service "$rootfs"/etc/ssh/ssh_host_*
  sed -i 's/^session\s\+required\s\+pam_loginuid\.so/session optional pam_loginuid.so/' "$rootfs/etc/pam.d/sshd"
  # Outside a container systemd makes / a shared mount at boot; inside one it leaves podman's private
  # propagation, and then a service's credentials (LoadCredential=, the router's keys) are mounted where the
  # service cannot see them: "Permission denied" for a non-root User= (systemd/systemd#38103). Do at boot what
  # systemd does on a real host.
  cat >"$rootfs/etc/systemd/system/pdserve-shared-root.service" <<'UNIT'
[Unit]
Description=Shared mount propagation for / (as systemd sets it up outside containers)
DefaultDependencies=no
Before=sysinit.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/mount --make-rshared /

[Install]
WantedBy=sysinit.target
UNIT
  mkdir -p "$rootfs/etc/systemd/system/sysinit.target.wants"
  ln -sf ../pdserve-shared-root.service "$rootfs/etc/systemd/system/sysinit.target.wants/pdserve-shared-root.service"
# recipe-end
  say "packing $tarball"
  tar --numeric-owner --one-file-system -C "$rootfs" -czf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
  # Older recipes' tarballs are dead weight, but a week-old one may be another branch's current
  # recipe on this machine: keep those (re-importing is seconds, a rebuild minutes).
  find "$PDSERVE_CACHE/images" -maxdepth 1 -name "pdserve-systemd-$SUITE-*.tar.gz" ! -path "$tarball" -mtime +7 -delete
else
  say "using cached $tarball"
fi

say "podman import -> $IMAGE"
podman import --quiet \
  --change 'CMD=["/sbin/init"]' \
  --change 'STOPSIGNAL=SIGRTMIN+3' \
  --change "LABEL=pdserve.recipe=$recipe" \
  "$tarball" "$IMAGE" >/dev/null
say "$IMAGE ready (recipe $recipe)"
