# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the sglang_install role needs to know about a host, read in one go (module install_facts).

Read-only. Commands run through a ``run(argv) -> (rc, stdout, stderr)`` callable and tools are found
through a ``which(name) -> path or None`` callable (``AnsibleModule.run_command`` and
``get_bin_path`` in the module), so tests can stand in for both.
"""

import ctypes.util
import glob
import grp
import json
import os
import platform
import pwd
import re
import shutil
import stat
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.host.gpu import parse_nvcc_version
from ansible_collections.pdserve.sglang.plugins.module_utils.host.observe import nearest_existing

GIB = 2.0 ** 30

# Asked of the interpreter the venv will be made from (it may not be the one running this module).
# Debian ships ensurepip (which `python -m venv` needs) in python3-venv, apart from python3.
PYTHON_PROBE = r"""
import json, platform, sys
try:
    import ensurepip, venv
    has_venv = True
except ImportError:
    has_venv = False
libc = platform.libc_ver()
print(json.dumps({"version": "%d.%d" % sys.version_info[:2], "full_version": "%d.%d.%d" % sys.version_info[:3],
                  "venv": has_venv, "libc": [libc[0], libc[1]], "machine": platform.machine()}))
"""

# Asked of the venv's own interpreter: every installed distribution and its version (pip's view, without pip's
# start-up cost), so that a rerun whose pins are all met does not hand the venv to pip at all.
VENV_PACKAGES_PROBE = r"""
import json
try:
    from importlib import metadata
except ImportError:
    import importlib_metadata as metadata
print(json.dumps({(d.metadata["Name"] or ""): d.version for d in metadata.distributions()}))
"""

# Where a UCX installed from source or a vendor package puts libucp when ldconfig does not know it.
LIBUCP_GLOBS = ("/usr/lib/*/libucp.so*", "/usr/lib/libucp.so*", "/usr/local/lib/libucp.so*",
                "/usr/local/ucx/lib/libucp.so*", "/opt/ucx*/lib/libucp.so*")
_UCX_VERSION_RES = (re.compile(r"Library version:\s*(\S+)"), re.compile(r"UCX version[ =:]*(\S+)"))


def python_info(run: Callable[..., Any], python: str) -> Tuple[Dict[str, Any], Dict[str, str], str]:
    """The interpreter's version, whether it has the venv module, and the C library it runs on."""
    info: Dict[str, Any] = {"path": python, "found": False, "version": "", "full_version": "", "venv": False, "error": ""}
    libc = {"name": "", "version": ""}
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        info["error"] = "%s does not exist or is not executable" % python
        return info, libc, ""
    rc, out, err = run([python, "-c", PYTHON_PROBE])
    try:
        data = json.loads(out.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        data = None
    if not isinstance(data, dict):
        info["error"] = "%s -c failed (rc %s): %s" % (python, rc, (err or out).strip()[-300:])
        return info, libc, ""
    info.update(found=True, version=data["version"], full_version=data["full_version"], venv=bool(data["venv"]))
    libc = {"name": data["libc"][0] or "", "version": data["libc"][1] or ""}
    return info, libc, data.get("machine") or ""


def system_ucx(run: Callable[..., Any], which: Callable[[str], Optional[str]],
               find_library: Callable[[str], Optional[str]] = ctypes.util.find_library,
               patterns: Sequence[str] = LIBUCP_GLOBS) -> Dict[str, Any]:
    """A UCX outside Python packages: ``ucx_info`` on PATH, or ``libucp`` in the system library paths."""
    found = {"present": False, "ucx_info": which("ucx_info") or "", "libucp": "", "version": ""}
    if found["ucx_info"]:
        rc, out, err = run([found["ucx_info"], "-v"])
        for regex in _UCX_VERSION_RES:
            match = regex.search(out or "")
            if rc == 0 and match:
                found["version"] = match.group(1)
                break
    lib = find_library("ucp")
    if lib:
        found["libucp"] = lib
    else:
        for pattern in patterns:
            hits = sorted(glob.glob(pattern))
            if hits:
                found["libucp"] = hits[0]
                break
    found["present"] = bool(found["ucx_info"] or found["libucp"])
    return found


def cuda_toolkit(run: Callable[..., Any], which: Callable[[str], Optional[str]], cuda_home: Optional[str]) -> Dict[str, Any]:
    """``nvcc`` in CUDA_HOME/bin, else on PATH, with its release (``13.0``)."""
    nvcc = os.path.join(cuda_home, "bin", "nvcc") if cuda_home else ""
    if not (nvcc and os.path.isfile(nvcc) and os.access(nvcc, os.X_OK)):
        nvcc = which("nvcc") or ""
    info = {"home": cuda_home or "", "nvcc": nvcc, "version": ""}
    if nvcc:
        rc, out, err = run([nvcc, "--version"])
        parsed = parse_nvcc_version(out) if rc == 0 else None
        if parsed:
            info["version"] = parsed["version"]
    return info


MOUNTINFO = "/proc/self/mountinfo"


def _unescape_mount(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def mount_table(text: str) -> List[Dict[str, str]]:
    """``[{mount, fstype, source}]`` from the text of ``/proc/self/mountinfo``, in its order (a later line over the
    same mount point is the mount on top)."""
    table = []
    for line in (text or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        table.append({"mount": _unescape_mount(fields[4]), "fstype": tail[0], "source": _unescape_mount(tail[1])})
    return table


def filesystem_of(path: str, table: List[Dict[str, str]]) -> Dict[str, str]:
    """The mount that holds ``path`` (an existing, absolute path): the longest mount point that is ``path`` or one of
    its parents, the last one mounted there when several are. ``{mount, fstype, source}``; empty values when unknown."""
    real = os.path.realpath(path)
    best = None
    for entry in table:
        mount = entry["mount"]
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) >= len(best["mount"])):
            best = entry
    return dict(best) if best else {"mount": "", "fstype": "", "source": ""}


def _read_mounts() -> List[Dict[str, str]]:
    try:
        with open(MOUNTINFO) as handle:
            return mount_table(handle.read())
    except (IOError, OSError):
        return []


def disk(entries: List[Dict[str, Any]], usage: Callable[[str], Any] = shutil.disk_usage,
         mounts: Optional[Callable[[], List[Dict[str, str]]]] = None) -> List[Dict[str, Any]]:
    """Free space for each ``{name, path, min_free_gb[, present, incomplete]}``, and the filesystem that holds it.

    What an entry is for counts as in place when ``present`` (default: the path itself) exists and ``incomplete``
    (a marker an interrupted install leaves) does not: then it asks for nothing (a rerun must not fail). An empty
    directory where a venv goes (a mount point, a venv an interrupted run made) is not a venv: with ``present`` set to
    its ``bin/python`` and ``incomplete`` to the role's marker it still needs its space.
    Entries on one filesystem add up: each that needs space must fit together with the others there.
    """
    table = (mounts or _read_mounts)()
    result = []
    for entry in entries:
        path = entry["path"]
        item = {"name": entry["name"], "path": path, "min_free_gb": float(entry["min_free_gb"] or 0),
                "checked": "", "exists": False, "need_gb": 0.0, "free_gb": None, "free_bytes": None,
                "size_bytes": None, "filesystem": {"mount": "", "fstype": "", "source": ""},
                "need_gb_total": 0.0, "shared_with": [], "ok": True, "error": "", "device": None}
        if not path or not os.path.isabs(path):
            item.update(ok=False, error="%r is not an absolute path" % (path,))
            result.append(item)
            continue
        checked = nearest_existing(path)
        item["checked"] = checked
        present = entry.get("present") or path
        incomplete = entry.get("incomplete") or ""
        item["exists"] = (os.path.exists(present) and checked == os.path.abspath(path)
                          and not (incomplete and os.path.lexists(incomplete)))
        item["need_gb"] = 0.0 if item["exists"] else item["min_free_gb"]
        measured = usage(checked)
        item["free_gb"] = round(measured.free / GIB, 1)
        item["free_bytes"] = int(measured.free)
        item["size_bytes"] = int(measured.total)
        item["filesystem"] = filesystem_of(checked, table)
        item["device"] = os.stat(checked).st_dev
        result.append(item)
    for item in result:
        if item["error"]:
            continue
        same = [other for other in result if not other["error"] and other["device"] == item["device"]]
        item["need_gb_total"] = sum(other["need_gb"] for other in same)
        item["shared_with"] = [other["name"] for other in same if other is not item]
        # A path that exists needs nothing, however full its filesystem is.
        item["ok"] = item["need_gb"] == 0 or item["free_bytes"] >= item["need_gb_total"] * GIB
    for item in result:
        del item["device"]
    return result


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def path_info(paths: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    """``{path: {exists, isdir, owner, group, mode}}`` (names, and mode as ``"0755"``; empty when absent)."""
    result = {}
    for path in paths:
        info = {"exists": False, "isdir": False, "owner": "", "group": "", "mode": ""}
        try:
            st = os.stat(path)
        except OSError:
            result[path] = info
            continue
        info.update(exists=True, isdir=os.path.isdir(path), mode="%04o" % stat.S_IMODE(st.st_mode),
                    owner=_name(pwd.getpwuid, st.st_uid), group=_name(grp.getgrgid, st.st_gid))
        result[path] = info
    return result


def user_info(names: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    """``{name: {exists, uid, home}}``."""
    result = {}
    for name in names:
        try:
            entry = pwd.getpwnam(name)
            result[name] = {"exists": True, "uid": entry.pw_uid, "home": entry.pw_dir}
        except KeyError:
            result[name] = {"exists": False, "uid": None, "home": ""}
    return result


def venv_packages(run: Callable[..., Any], venv_python: Optional[str]) -> Dict[str, str]:
    """``{name: version}`` of what the venv holds; empty when there is no venv (or it cannot answer: pip decides)."""
    if not venv_python or not (os.path.isfile(venv_python) and os.access(venv_python, os.X_OK)):
        return {}
    rc, out, _err = run([venv_python, "-c", VENV_PACKAGES_PROBE])
    try:
        data = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
    except (ValueError, IndexError):
        data = {}
    if not isinstance(data, dict):
        return {}
    return {str(name): str(version) for name, version in data.items() if name}


def current_umask() -> int:
    """The umask of this process: that of the become user, which the role's pip and download run with too."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def gather(run: Callable[..., Any], which: Callable[[str], Optional[str]], python: str, cuda_home: Optional[str],
           disk_entries: List[Dict[str, Any]], paths: Iterable[str], users: Iterable[str],
           venv_python: Optional[str] = None) -> Dict[str, Any]:
    """Everything at once: the facts the install role decides and judges with."""
    py, libc, machine = python_info(run, python)
    if not libc["name"]:
        # No answer from that interpreter: the C library of the one running this module is the host's too.
        name, version = platform.libc_ver()
        libc = {"name": name or "", "version": version or ""}
    return {
        "python": py,
        "libc": libc,
        "machine": machine or platform.machine(),
        "ucx": system_ucx(run, which),
        "cuda": cuda_toolkit(run, which, cuda_home),
        "git": which("git") or "",
        "cc": which("cc") or which("gcc") or "",
        "disk": disk(disk_entries),
        "paths": path_info(paths),
        "users": user_info(users),
        "venv_packages": venv_packages(run, venv_python),
        "umask": current_umask(),
    }
