#!/usr/bin/env bash
# Debian's Prometheus, node exporter and Alertmanager (and nftables, keepalived) as a local apt repository in the machine cache,
# plus promtool and amtool unpacked from it for the static tests (nothing is installed on this machine
# and no Prometheus runs here). scripts/setup.sh calls it; safe to re-run.
#
#   ${PDSERVE_CACHE:-/var/cache/pdserve}/apt-monitoring/
#     *.deb      the packages (and python3-apt, nftables) with their whole dependency closure (apt-get download), so an apt on a
#                bare Debian 12 host without network can install them
#     Packages   the index of a flat repository: deb [trusted=yes] file:<this directory> ./
#     root/      prometheus and alertmanager unpacked (root/usr/bin/promtool, root/usr/bin/amtool)
#
# The molecule scenario mounts the directory into its container; it is also the air-gapped install path
# (copy it to the host, point monitoring_apt_repository at it).
set -euo pipefail

PDSERVE_CACHE=${PDSERVE_CACHE:-/var/cache/pdserve}
DEST=$PDSERVE_CACHE/apt-monitoring
PACKAGES=(prometheus prometheus-node-exporter prometheus-alertmanager python3-apt nftables keepalived)
# Debian 12's versions (the role is written for them); a stable update keeps the upstream version. python3-apt:
# Ansible's apt module needs it on the host and installs it from the same repository when missing. nftables: the
# host firewall (pdserve.sglang.sglang_firewall) on the multi-host stand. keepalived: the routers' virtual address
# (pdserve.sglang.sglang_router_address) on the stand's two router hosts.
EXPECT_UPSTREAM=(2.42.0 1.5.0 0.25.0 2.6.0 1.0.6 1:2.2.7)

say() { printf 'apt-monitoring: %s\n' "$*"; }
die() { printf 'apt-monitoring: ERROR: %s\n' "$*" >&2; exit 1; }

candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}'; }

versions=()
for pkg in "${PACKAGES[@]}"; do versions+=("$pkg=$(candidate "$pkg")"); done
if [[ " ${versions[*]} " == *"=(none) "* || " ${versions[*]} " == *"= "* ]]; then
  [[ $(id -u) == 0 ]] || die "no apt candidate for ${PACKAGES[*]}; run as root (apt-get update)"
  say "apt-get update (no candidate for ${PACKAGES[*]})"
  apt-get update -qq
  versions=()
  for pkg in "${PACKAGES[@]}"; do versions+=("$pkg=$(candidate "$pkg")"); done
fi
for i in "${!PACKAGES[@]}"; do
  v=${versions[$i]#*=}
  [[ $v == "${EXPECT_UPSTREAM[$i]}"* ]] || die "${PACKAGES[$i]} candidate is '$v', expected ${EXPECT_UPSTREAM[$i]} (Debian 12)"
done

stamp=$DEST/.pdserve-apt-monitoring.stamp
want=$(printf '%s\n' v1 "${versions[@]}" | sha256sum | cut -c1-16)
if [[ $(cat "$stamp" 2>/dev/null) == "$want" && -x $DEST/root/usr/bin/promtool && -f $DEST/Packages ]]; then
  say "$DEST is complete (${versions[*]})"
  exit 0
fi

mkdir -p "$DEST"
start=$SECONDS
# Every package they need, recursively (alternatives included), so a bare host resolves offline.
mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${versions[@]}" 2>/dev/null | awk '/^[a-z0-9]/ {print $1}' | sort -u)
((${#closure[@]} > 3)) || die "could not resolve the dependencies of ${PACKAGES[*]}"
say "apt-get download ${#closure[@]} packages (${versions[*]} and their dependencies)"
find "$DEST" -maxdepth 1 -name '*.deb' -delete
(cd "$DEST" && apt-get download -qq "${closure[@]}" "${versions[@]}" >/dev/null) \
  || die "apt-get download failed"

# The flat repository's index (what dpkg-scanpackages writes), from each package's control fields.
python3 - "$DEST" <<'PY'
import hashlib, os, subprocess, sys

dest = sys.argv[1]
paragraphs = []
for name in sorted(os.listdir(dest)):
    if not name.endswith(".deb"):
        continue
    path = os.path.join(dest, name)
    control = subprocess.run(["dpkg-deb", "-f", path], check=True, capture_output=True, text=True).stdout.rstrip("\n")
    data = open(path, "rb").read()
    paragraphs.append("%s\nFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n" % (
        control, name, len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()))
with open(os.path.join(dest, "Packages"), "w") as handle:
    handle.write("\n".join(paragraphs))
PY

rm -rf "$DEST/root"
for pkg in prometheus prometheus-alertmanager; do
  deb=$(compgen -G "$DEST/${pkg}_*.deb" || true)
  [[ -n $deb ]] || die "no ${pkg}_*.deb downloaded"
  dpkg-deb -x "${deb%%$'\n'*}" "$DEST/root"
done
"$DEST/root/usr/bin/promtool" --version >/dev/null 2>&1 || die "the unpacked promtool does not run"
echo "$want" >"$stamp"
say "filled $DEST in $((SECONDS - start)) s: $(find "$DEST" -maxdepth 1 -name '*.deb' | wc -l) packages, $(du -sh "$DEST" | cut -f1)"
