#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Read-only facts for sglang_install's preflight, printed as one JSON document.

Usage: sglang_install_probe.py CUDA_HOME NAME:GIB:PATH...   (run with the interpreter the venv will use)
For each NAME:GIB:PATH: the free space on the filesystem of the nearest existing ancestor of PATH, and
whether it holds the GiB asked for by every entry on that same filesystem together. A PATH that
already exists asks for nothing (the venv, build or model is already there; reruns must not fail).
"""
import ctypes.util
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys


def nearest_existing(path):
    path = os.path.abspath(path or "/")
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def disk(specs):
    entries = []
    for spec in specs:
        name, need, path = spec.split(":", 2)
        existing = nearest_existing(path)
        need = 0.0 if existing == os.path.abspath(path) else float(need)
        entries.append({"name": name, "path": path, "checked": existing, "need_gb": need,
                        "free_gb": round(shutil.disk_usage(existing).free / 2.0 ** 30, 1),
                        "device": os.stat(existing).st_dev})
    for entry in entries:
        same = [e for e in entries if e["device"] == entry["device"]]
        entry["need_gb_total"] = sum(e["need_gb"] for e in same)
        entry["shared_with"] = [e["name"] for e in same if e is not entry]
        entry["ok"] = entry["free_gb"] >= entry["need_gb_total"]
    return entries


def run(argv):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30, check=False)
        return out.returncode, out.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, str(exc)


def system_ucx():
    """A UCX outside Python packages: ucx_info on PATH, or libucp in the system library paths."""
    found = {"ucx_info": shutil.which("ucx_info") or "", "libucp": "", "version": ""}
    if found["ucx_info"]:
        rc, out = run([found["ucx_info"], "-v"])
        m = re.search(r"Library version:\s*(\S+)", out) or re.search(r"UCX version[ =:]*(\S+)", out)
        if rc == 0 and m:
            found["version"] = m.group(1)
    lib = ctypes.util.find_library("ucp")
    if lib:
        found["libucp"] = lib
    else:
        for pattern in ("/usr/lib/*/libucp.so*", "/usr/lib/libucp.so*", "/usr/local/lib/libucp.so*",
                        "/usr/local/ucx/lib/libucp.so*", "/opt/ucx*/lib/libucp.so*"):
            hits = sorted(glob.glob(pattern))
            if hits:
                found["libucp"] = hits[0]
                break
    found["present"] = bool(found["ucx_info"] or found["libucp"])
    return found


def cuda_toolkit(cuda_home):
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    if not os.access(nvcc, os.X_OK):
        nvcc = shutil.which("nvcc") or ""
    info = {"nvcc": nvcc, "version": ""}
    if nvcc:
        rc, out = run([nvcc, "--version"])
        m = re.search(r"release (\d+\.\d+)", out)
        if rc == 0 and m:
            info["version"] = m.group(1)
    return info


def main():
    cuda_home = sys.argv[1]
    specs = sys.argv[2:]
    try:
        import ensurepip  # noqa: F401  (Debian splits it into python3-venv)
        import venv  # noqa: F401
        has_venv = True
    except ImportError:
        has_venv = False
    print(json.dumps({
        "python": {"executable": sys.executable, "version": "%d.%d" % sys.version_info[:2],
                   "full_version": "%d.%d.%d" % sys.version_info[:3], "venv": has_venv},
        "libc": {"name": platform.libc_ver()[0], "version": platform.libc_ver()[1]},
        "machine": platform.machine(),
        "disk": disk(specs),
        "ucx": system_ucx(),
        "cuda": cuda_toolkit(cuda_home),
        "git": shutil.which("git") or "",
        "cc": shutil.which("cc") or shutil.which("gcc") or "",
    }))


if __name__ == "__main__":
    main()
