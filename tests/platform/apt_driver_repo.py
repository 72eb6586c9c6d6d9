# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Build the signed local apt repositories the nvidia_driver molecule scenario installs from.

    python3 tests/platform/apt_driver_repo.py [--force]       (scripts/setup.sh runs it)

The scenario's container has no network. This writes, under ${PDSERVE_CACHE}/apt-driver/<recipe>/
(``repo`` links to the current one; the scenario mounts it read-only at /opt/pdserve/apt-driver):

- ``nvidia/debian12/x86_64/``: a flat repository like NVIDIA's CUDA repository, with STAND-IN
  packages under NVIDIA's names in two branches (580.95.05 and 595.71.05): the driver, DKMS
  module, nvidia-smi (tests/unit/fixtures/gpu/fake_nvidia_smi.py replaying the synthetic 8x RTX PRO
  6000 Blackwell capture at the package's version), a persistence daemon that records its
  arguments, Fabric Manager, DCGM 4 and the CUDA 13.0 toolkit (a fake nvcc, update-alternatives
  like the real one);
- ``debian/``: a bookworm repository standing in for Debian's mirror: dummies of
  linux-headers-<this machine's kernel> (the container's kernel is this machine's),
  linux-headers-amd64, dkms and initramfs-tools (no update-initramfs in it: the scenario must never
  run one), and the REAL python3-apt with its two missing dependencies, fetched with
  ``apt-get download`` from Debian's mirror (the apt module needs them);
- ``keys/``: the throwaway signing key (armored public key and fingerprint). Both repositories are
  signed with it, so the role's Signed-By and fingerprint check run for real.

Everything is rebuilt only when the recipe changes (this file, the fake nvidia-smi and its capture,
the kernel release, the mirror); the real .deb files are cached in ``debs/`` across recipes.
"""

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU_FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "gpu")
CAPTURE = os.path.join(GPU_FIXTURES, "blackwell8x")
CACHE = os.path.join(os.environ.get("PDSERVE_CACHE", "/var/cache/pdserve"), "apt-driver")
MIRROR = os.environ.get("PDSERVE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "bookworm"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
REAL_PACKAGES = ("python3-apt", "python-apt-common", "distro-info-data")
# Inside the scenario's container (see extensions/molecule/nvidia_driver).
FAKE_HOST = "/opt/pdserve/fake-host"
BRANCHES = ("580.95.05", "595.71.05")
KERNEL = os.uname()[2]


def say(message):
    print("apt-driver-repo: %s" % message)
    sys.stdout.flush()


def recipe():
    digest = hashlib.sha256()
    for path in (os.path.abspath(__file__), os.path.join(GPU_FIXTURES, "fake_nvidia_smi.py"),
                 os.path.join(CAPTURE, "query-gpu.csv"), os.path.join(CAPTURE, "nvidia-smi-q.xml")):
        with open(path, "rb") as handle:
            digest.update(handle.read())
    digest.update(("%s\n%s\n%s\n" % (KERNEL, MIRROR, SUITE)).encode("utf-8"))
    return digest.hexdigest()[:12]


def _file(content, mode=0o644):
    return {"content": content, "mode": mode}


def _script(content):
    return _file(content, 0o755)


def nvidia_packages(version):
    """Stand-ins for one driver release of NVIDIA's debian12 repository."""
    deb = version + "-1"
    branch = version.split(".")[0]
    smi = (
        "#!/bin/sh\n# pdserve stand-in for nvidia-smi (not NVIDIA's): replays a synthetic capture at driver %(v)s.\n"
        "FAKE_NVIDIA_SMI_DRIVER_VERSION=%(v)s FAKE_NVIDIA_SMI_LOADED_VERSION_FILE=%(root)s/sys/module/nvidia/version \\\n"
        "FAKE_NVIDIA_SMI_PERSISTENCE_FILE=/run/nvidia-persistenced/pdserve-args \\\n"
        "  exec python3 /usr/share/pdserve-fake-gpu/fake_nvidia_smi.py /usr/share/pdserve-fake-gpu/capture \"$@\"\n"
        % {"v": version, "root": FAKE_HOST})
    persistenced = (
        "#!/bin/sh\n# pdserve stand-in for nvidia-persistenced: records its arguments, then idles (forks like the real one).\n"
        "mkdir -p /run/nvidia-persistenced\necho \"$*\" > /run/nvidia-persistenced/pdserve-args\n"
        "sleep infinity </dev/null >/dev/null 2>&1 &\necho $! > /run/nvidia-persistenced/nvidia-persistenced.pid\n")
    persistenced_unit = (
        "[Unit]\nDescription=NVIDIA Persistence Daemon (pdserve stand-in)\nWants=syslog.target\n\n[Service]\n"
        "Type=forking\nPIDFile=/run/nvidia-persistenced/nvidia-persistenced.pid\nRestart=always\n"
        "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose\n"
        "ExecStopPost=/bin/rm -rf /run/nvidia-persistenced\n\n[Install]\nWantedBy=multi-user.target\n")
    fabric_unit = (
        "[Unit]\nDescription=NVIDIA fabric manager service (pdserve stand-in)\n\n[Service]\n"
        "ExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n")
    with open(os.path.join(GPU_FIXTURES, "fake_nvidia_smi.py")) as handle:
        fake_smi = handle.read()
    capture = {}
    for name in ("query-gpu.csv", "nvidia-smi-q.xml"):
        with open(os.path.join(CAPTURE, name)) as handle:
            capture["/usr/share/pdserve-fake-gpu/capture/" + name] = _file(handle.read())
    smi_files = {"/usr/bin/nvidia-smi": _script(smi),
                 "/usr/share/pdserve-fake-gpu/fake_nvidia_smi.py": _file(fake_smi)}
    smi_files.update(capture)
    return [
        {"name": "nvidia-driver-pinning-" + branch, "version": deb, "arch": "all"},
        {"name": "nvidia-kernel-open-dkms", "version": deb, "depends": "dkms", "conflicts": "nvidia-kernel-dkms",
         "files": {"/usr/src/nvidia-%s/README.pdserve" % version: _file("stand-in: no module source\n")}},
        {"name": "nvidia-kernel-dkms", "version": deb, "depends": "dkms", "conflicts": "nvidia-kernel-open-dkms"},
        {"name": "libcuda1", "version": deb},
        {"name": "nvidia-smi", "version": deb, "files": smi_files},
        {"name": "nvidia-persistenced", "version": deb,
         "files": {"/usr/bin/nvidia-persistenced": _script(persistenced),
                   "/lib/systemd/system/nvidia-persistenced.service": _file(persistenced_unit)}},
        {"name": "nvidia-driver-cuda", "version": deb,
         "depends": "nvidia-smi (= %s), libcuda1 (= %s), nvidia-persistenced" % (deb, deb)},
        {"name": "nvidia-fabricmanager", "version": deb,
         "files": {"/lib/systemd/system/nvidia-fabricmanager.service": _file(fabric_unit)}},
        {"name": "libnvidia-nscq", "version": deb},
    ]


def extra_packages():
    nvcc = ("#!/bin/sh\n# pdserve stand-in for nvcc\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
            "echo 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    dcgm_unit = ("[Unit]\nDescription=NVIDIA DCGM service (pdserve stand-in)\n\n[Service]\n"
                 "ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm\n\n[Install]\nWantedBy=multi-user.target\n")
    return [
        {"name": "cuda-toolkit-13-0", "version": "13.0.2-1",
         "files": {"/usr/local/cuda-13.0/bin/nvcc": _script(nvcc)},
         "postinst": "#!/bin/sh\nset -e\nupdate-alternatives --install /usr/local/cuda cuda /usr/local/cuda-13.0 130\n",
         "prerm": "#!/bin/sh\nset -e\nupdate-alternatives --remove cuda /usr/local/cuda-13.0\n"},
        {"name": "datacenter-gpu-manager-4-core", "version": "1:4.4.1-1",
         "files": {"/usr/bin/nv-hostengine": _script("#!/bin/sh\n# pdserve stand-in for nv-hostengine\nexec sleep infinity\n"),
                   "/lib/systemd/system/nvidia-dcgm.service": _file(dcgm_unit)}},
        {"name": "datacenter-gpu-manager-4-cuda13", "version": "1:4.4.1-1",
         "depends": "datacenter-gpu-manager-4-core (= 1:4.4.1-1)"},
    ]


def debian_dummies():
    return [
        {"name": "linux-headers-" + KERNEL, "version": "1.0-pdserve1"},
        {"name": "linux-headers-amd64", "version": "1.0-pdserve1", "depends": "linux-headers-" + KERNEL},
        {"name": "dkms", "version": "3.0.10-8+pdserve1"},
        {"name": "initramfs-tools", "version": "0.142+pdserve1", "arch": "all"},
    ]


def build_deb(spec, outdir, work):
    """A .deb from a spec: name, version, arch (amd64), depends, conflicts, files, postinst, prerm."""
    tree = tempfile.mkdtemp(dir=work)
    os.makedirs(os.path.join(tree, "DEBIAN"))
    for path, item in spec.get("files", {}).items():
        target = os.path.join(tree, path.lstrip("/"))
        if not os.path.isdir(os.path.dirname(target)):
            os.makedirs(os.path.dirname(target))
        with open(target, "w") as handle:
            handle.write(item["content"])
        os.chmod(target, item["mode"])
    control = [
        "Package: %s" % spec["name"],
        "Version: %s" % spec["version"],
        "Architecture: %s" % spec.get("arch", "amd64"),
        "Maintainer: pdserve.sglang tests <tests@pdserve.invalid>",
        "Priority: optional",
        "Section: pdserve-stand-in",
    ]
    for field in ("depends", "conflicts"):
        if spec.get(field):
            control.append("%s: %s" % (field.capitalize(), spec[field]))
    control.append("Description: pdserve test stand-in for %s\n NOT the real package: built by tests/platform/"
                   "apt_driver_repo.py for the nvidia_driver molecule scenario." % spec["name"])
    with open(os.path.join(tree, "DEBIAN", "control"), "w") as handle:
        handle.write("\n".join(control) + "\n")
    for script in ("postinst", "prerm"):
        if spec.get(script):
            path = os.path.join(tree, "DEBIAN", script)
            with open(path, "w") as handle:
                handle.write(spec[script])
            os.chmod(path, 0o755)
    version = spec["version"].split(":")[-1]
    deb = os.path.join(outdir, "%s_%s_%s.deb" % (spec["name"], version, spec.get("arch", "amd64")))
    subprocess.check_call(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", tree, deb], stdout=subprocess.DEVNULL)
    shutil.rmtree(tree)
    return deb


def download_real(debs_dir, work):
    """The real Debian packages, with a private apt state pointing at the bookworm mirror."""
    wanted = [name for name in REAL_PACKAGES
              if not [f for f in os.listdir(debs_dir) if f.startswith(name + "_")]]
    if not wanted:
        return
    if not os.path.exists(DEBIAN_KEYRING):
        sys.exit("apt-driver-repo: %s is missing (apt-get install debian-archive-keyring)" % DEBIAN_KEYRING)
    state = os.path.join(work, "apt")
    for sub in ("lists/partial", "cache/archives/partial", "etc/preferences.d", "etc/apt.conf.d", "etc/sources.list.d"):
        os.makedirs(os.path.join(state, sub))
    with open(os.path.join(state, "etc", "sources.list"), "w") as handle:
        handle.write("deb [signed-by=%s] %s %s main\n" % (DEBIAN_KEYRING, MIRROR, SUITE))
    options = []
    for key, value in (("Dir::Etc", os.path.join(state, "etc")), ("Dir::State", state),
                       ("Dir::State::Lists", os.path.join(state, "lists")), ("Dir::Cache", os.path.join(state, "cache")),
                       ("Dir::State::status", "/dev/null"), ("APT::Architecture", "amd64"),
                       ("APT::Architectures", "amd64"), ("Debug::NoLocking", "1"), ("APT::Sandbox::User", "root")):
        options += ["-o", "%s=%s" % (key, value)]
    say("apt-get download %s from %s %s" % (" ".join(wanted), MIRROR, SUITE))
    subprocess.check_call(["apt-get", "-qq"] + options + ["update"])
    subprocess.check_call(["apt-get", "-qq"] + options + ["download"] + wanted, cwd=debs_dir)


def _hashes(directory, names):
    lines = {"MD5Sum": [], "SHA256": []}
    for name in names:
        with open(os.path.join(directory, name), "rb") as handle:
            data = handle.read()
        lines["MD5Sum"].append(" %s %d %s" % (hashlib.md5(data).hexdigest(), len(data), name))  # nosec B324 - apt index field
        lines["SHA256"].append(" %s %d %s" % (hashlib.sha256(data).hexdigest(), len(data), name))
    return "".join("%s:\n%s\n" % (field, "\n".join(entries)) for field, entries in lines.items())


def write_packages(repo_root, pool, index_dir):
    """Packages and Packages.gz of the .debs in ``pool`` (relative to ``repo_root``) into ``index_dir``."""
    out = subprocess.check_output(["dpkg-scanpackages", "--multiversion", pool, "/dev/null"], cwd=repo_root,
                                  stderr=subprocess.DEVNULL)
    if not os.path.isdir(index_dir):
        os.makedirs(index_dir)
    with open(os.path.join(index_dir, "Packages"), "wb") as handle:
        handle.write(out)
    with gzip.open(os.path.join(index_dir, "Packages.gz"), "wb") as handle:
        handle.write(out)


def sign(gnupghome, release):
    base = ["gpg", "--homedir", gnupghome, "--batch", "--yes", "--digest-algo", "SHA512"]
    directory = os.path.dirname(release)
    subprocess.check_call(base + ["--clearsign", "-o", os.path.join(directory, "InRelease"), release])
    subprocess.check_call(base + ["--armor", "--detach-sign", "-o", os.path.join(directory, "Release.gpg"), release])


def make_key(gnupghome, keys_dir):
    subprocess.check_call(["gpg", "--homedir", gnupghome, "--batch", "--quiet", "--passphrase", "",
                           "--quick-gen-key", "pdserve throwaway apt key <apt-driver@pdserve.invalid>",
                           "rsa3072", "sign", "never"], stderr=subprocess.DEVNULL)
    listing = subprocess.check_output(["gpg", "--homedir", gnupghome, "--batch", "--with-colons", "--list-keys"],
                                      universal_newlines=True, stderr=subprocess.DEVNULL)
    fingerprint = [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")][0]
    os.makedirs(keys_dir)
    armored = subprocess.check_output(["gpg", "--homedir", gnupghome, "--batch", "--armor", "--export", fingerprint])
    with open(os.path.join(keys_dir, "pdserve-apt-test.asc"), "wb") as handle:
        handle.write(armored)
    with open(os.path.join(keys_dir, "fingerprint"), "w") as handle:
        handle.write(fingerprint + "\n")


def build(dest, work):
    gnupghome = os.path.join(work, "gnupg")
    os.makedirs(gnupghome, 0o700)
    make_key(gnupghome, os.path.join(dest, "keys"))
    date = time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime())

    flat = os.path.join(dest, "nvidia", "debian12", "x86_64")
    os.makedirs(flat)
    specs = [p for version in BRANCHES for p in nvidia_packages(version)] + extra_packages()
    for spec in specs:
        build_deb(spec, flat, work)
    write_packages(flat, ".", flat)
    with open(os.path.join(flat, "Release"), "w") as handle:
        handle.write("Origin: pdserve stand-in for NVIDIA\nLabel: pdserve stand-in for NVIDIA CUDA\n"
                     "Architectures: amd64 all\nDate: %s\n%s" % (date, _hashes(flat, ["Packages", "Packages.gz"])))
    sign(gnupghome, os.path.join(flat, "Release"))

    debian = os.path.join(dest, "debian")
    pool = os.path.join(debian, "pool", "main")
    os.makedirs(pool)
    for spec in debian_dummies():
        build_deb(spec, pool, work)
    debs = os.path.join(CACHE, "debs")
    if not os.path.isdir(debs):
        os.makedirs(debs)
    download_real(debs, work)
    for name in sorted(os.listdir(debs)):
        if name.endswith(".deb") and name.split("_")[0] in REAL_PACKAGES:
            shutil.copy(os.path.join(debs, name), pool)
    dists = os.path.join(debian, "dists", SUITE)
    write_packages(debian, "pool/main", os.path.join(dists, "main", "binary-amd64"))
    os.makedirs(os.path.join(dists, "contrib", "binary-amd64"))
    for index in ("Packages", "Packages.gz"):
        path = os.path.join(dists, "contrib", "binary-amd64", index)
        with (gzip.open(path, "wb") if index.endswith(".gz") else open(path, "wb")) as handle:
            handle.write(b"")
    indexes = ["%s/binary-amd64/%s" % (c, i) for c in ("main", "contrib") for i in ("Packages", "Packages.gz")]
    with open(os.path.join(dists, "Release"), "w") as handle:
        handle.write("Origin: pdserve stand-in for Debian\nLabel: pdserve stand-in for Debian\nSuite: stable\n"
                     "Codename: %s\nComponents: main contrib\nArchitectures: amd64\nDate: %s\n%s"
                     % (SUITE, date, _hashes(dists, indexes)))
    sign(gnupghome, os.path.join(dists, "Release"))


def main(argv):
    force = "--force" in argv
    name = recipe()
    dest = os.path.join(CACHE, name)
    link = os.path.join(CACHE, "repo")
    if not force and os.path.isfile(os.path.join(dest, "keys", "fingerprint")) and os.path.realpath(link) == dest:
        say("%s is up to date (recipe %s, kernel %s)" % (link, name, KERNEL))
        return 0
    for tool in ("dpkg-deb", "dpkg-scanpackages", "gpg", "apt-get"):
        if not shutil.which(tool):
            sys.exit("apt-driver-repo: %s is missing (run scripts/setup.sh)" % tool)
    if not os.path.isdir(CACHE):
        os.makedirs(CACHE)
    work = tempfile.mkdtemp(prefix="build.", dir=CACHE)
    try:
        staging = os.path.join(work, "repo")
        os.makedirs(staging)
        build(staging, work)
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.rename(staging, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.chmod(dest, 0o755)
    tmp_link = link + ".new"
    if os.path.lexists(tmp_link):
        os.remove(tmp_link)
    os.symlink(name, tmp_link)
    os.rename(tmp_link, link)
    # Older recipes are dead weight.
    for entry in os.listdir(CACHE):
        if len(entry) == 12 and entry != name and os.path.isdir(os.path.join(CACHE, entry)):
            shutil.rmtree(os.path.join(CACHE, entry))
    say("built %s (recipe %s, kernel %s)" % (link, name, KERNEL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
