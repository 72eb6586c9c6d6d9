# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a preflight reads on a host, with the standard library only: listening sockets and the
units that own them, whether an address belongs to the host, paths, free disk.

``root`` lets tests point the /proc readers at a fixture tree.
"""

import errno
import os
import pwd
import re
import shutil
import socket
from typing import Any, Dict, List, Optional, Tuple

_LISTEN = "0A"
_UNIT_RE = re.compile(r"system\.slice/(?:[^/\n]*/)*?([^/\n]+\.service)")


def _hex_ipv4(text):
    raw = bytes.fromhex(text)
    return socket.inet_ntop(socket.AF_INET, raw[::-1])


def _hex_ipv6(text):
    raw = bytes.fromhex(text)
    # /proc prints the address as four host-order 32-bit words.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def parse_proc_net_tcp(text: str, ipv6: bool = False) -> List[Dict[str, Any]]:
    """Listening sockets of /proc/net/tcp or tcp6: [{address, port, uid, inode}]."""
    result = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != _LISTEN:
            continue
        address, port = fields[1].split(":")
        result.append({
            "address": _hex_ipv6(address) if ipv6 else _hex_ipv4(address),
            "port": int(port, 16),
            "uid": int(fields[7]),
            "inode": fields[9],
        })
    return result


def unit_of_cgroup(text: Optional[str]) -> Optional[str]:
    """The systemd service a process belongs to, from /proc/PID/cgroup, or None."""
    match = _UNIT_RE.search(text or "")
    return match.group(1) if match else None


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def socket_owners(root: str = "/") -> Dict[str, List[str]]:
    """{socket inode: [pid, ...]} from /proc/*/fd (only what this user may read)."""
    owners: Dict[str, List[str]] = {}
    proc = os.path.join(root, "proc")
    for pid in os.listdir(proc) if os.path.isdir(proc) else []:
        if not pid.isdigit():
            continue
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            fds = os.listdir(fd_dir)
        except (IOError, OSError):
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except (IOError, OSError):
                continue
            if target.startswith("socket:["):
                owners.setdefault(target[8:-1], []).append(pid)
    return owners


def listeners(root: str = "/") -> List[Dict[str, Any]]:
    """Listening TCP sockets with their owners: [{address, port, uid, owners: [{pid, unit}]}].

    ``owners`` is empty when /proc/PID/fd of the owner cannot be read (the socket's uid then tells).
    """
    sockets = []
    for name, ipv6 in (("tcp", False), ("tcp6", True)):
        text = _read(os.path.join(root, "proc", "net", name))
        if text:
            sockets.extend(parse_proc_net_tcp(text, ipv6))
    by_inode = socket_owners(root)
    result = []
    for sock in sockets:
        owners = []
        for pid in sorted(set(by_inode.get(sock["inode"], [])), key=int):
            unit = unit_of_cgroup(_read(os.path.join(root, "proc", pid, "cgroup")))
            owners.append({"pid": pid, "unit": unit or "none"})
        result.append({"address": sock["address"], "port": sock["port"], "uid": sock["uid"], "owners": owners})
    return result


def uids_of(users: List[str]) -> List[int]:
    """The uids of the users that exist here (their sockets count as the stack's own when /proc hides the process)."""
    uids = []
    for user in users:
        try:
            uids.append(pwd.getpwnam(user).pw_uid)
        except KeyError:
            pass
    return uids


def address_is_local(address: str) -> Tuple[bool, Optional[str]]:
    """(True, None) when a socket can bind ``address`` on this host (port 0), else (False, reason)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        infos = socket.getaddrinfo(address, 0, family, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return False, "does not resolve (%s)" % exc
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind(infos[0][4])
        return True, None
    except (IOError, OSError) as exc:
        if exc.errno == errno.EADDRNOTAVAIL:
            return False, "is not an address of this host"
        return False, str(exc)
    finally:
        sock.close()


def nearest_existing(path: str) -> str:
    """``path`` itself when it exists, else its closest existing ancestor (``/`` for none)."""
    path = os.path.abspath(path or "/")
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def free_gib(path: str) -> float:
    """Free GiB on the filesystem that holds ``path`` (or its nearest existing parent)."""
    return round(shutil.disk_usage(nearest_existing(path)).free / 2.0 ** 30, 1)
