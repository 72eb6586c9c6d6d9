# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Hand a tree that an earlier version left to the service user to its new owner (module tree_owner).

Earlier versions let the model servers' user own the venvs, the model tree and the build directories. The
conversion walks the tree without following a symbolic link (``os.fwalk``, changes through file descriptors
opened with ``O_NOFOLLOW``), so a link the old owner planted cannot make root change a file outside the tree. Only
entries of the old owner change: the owner and group become the new ones, and group and other write, set-user-ID,
set-group-ID and sticky bits are dropped (``mode & 0o755``). Entries of anybody else are left exactly as they are,
and nothing is ever removed.
"""

import os
import stat
from typing import Any, Callable, Dict

# What the conversion keeps of a mode: no write for group and others, no set-ID or sticky bit.
KEEP_BITS = 0o755
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _wanted(st, uid, gid):
    return st.st_uid != uid or st.st_gid != gid or stat.S_IMODE(st.st_mode) & ~KEEP_BITS != 0


def _fix_fd(fd, uid, gid):
    """Owner, group and mode of an open file or directory: owner first (chown clears set-ID bits), then the mode."""
    st = os.fstat(fd)
    os.fchown(fd, uid, gid)
    os.fchmod(fd, stat.S_IMODE(st.st_mode) & KEEP_BITS)


def _entry(name, dirfd, uid, gid, from_uid, check, counts):
    """One directory entry that is not a directory fwalk descends into: a file, a link or a special file."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if st.st_uid != from_uid:
        counts["others"] += st.st_uid != uid
        return
    regular = stat.S_ISREG(st.st_mode)
    if not (_wanted(st, uid, gid) if regular else (st.st_uid, st.st_gid) != (uid, gid)):
        return
    counts["changed"] += 1
    if check:
        return
    if regular:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dirfd)
        try:
            _fix_fd(fd, uid, gid)
        finally:
            os.close(fd)
    else:
        # A link (its own owner; a link has no mode of its own) or a FIFO, socket or device node: owner only, never
        # through a path that could lead elsewhere.
        os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)


def convert(path: str, uid: int, gid: int, from_uid: int, check: bool = False,
            walk: Callable[..., Any] = os.fwalk) -> Dict[str, int]:
    """Give every entry of ``from_uid`` under ``path`` (``path`` included) to ``uid:gid``, without its group and
    other write and set-ID bits. Returns ``{changed, others}``: entries changed (or that would change in check mode)
    and entries of owners other than both, left alone. ``path`` must be a directory, not a link."""
    counts = {"changed": 0, "others": 0}
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError("%s is not a directory" % path)
    for dummy, dirnames, filenames, dirfd in walk(path, follow_symlinks=False):
        here = os.fstat(dirfd)
        if here.st_uid != from_uid:
            counts["others"] += here.st_uid != uid
        elif _wanted(here, uid, gid):
            counts["changed"] += 1
            if not check:
                _fix_fd(dirfd, uid, gid)
        for name in filenames:
            _entry(name, dirfd, uid, gid, from_uid, check, counts)
        # fwalk lists a link to a directory among the directories and does not descend into it: its own owner.
        for name in list(dirnames):
            try:
                link = stat.S_ISLNK(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode)
            except FileNotFoundError:
                continue
            if link:
                _entry(name, dirfd, uid, gid, from_uid, check, counts)
    return counts


def message(path: str, owner: str, group: str, from_owner: str, counts: Dict[str, int], check: bool) -> str:
    """One line for the task output."""
    if not counts["changed"]:
        text = "%s: nothing of %s to convert" % (path, from_owner)
    else:
        text = "%s: %s %d entries of %s to %s:%s (no group or other write, no set-ID bits)" % (
            path, "would give" if check else "gave", counts["changed"], from_owner, owner, group)
    if counts["others"]:
        text += "; %d entries of other owners left as they are" % counts["others"]
    return text
