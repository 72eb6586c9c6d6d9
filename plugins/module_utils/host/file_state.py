# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Whether small text files on the host are as wanted (content, owner, group, mode), read-only: what
pdserve.sglang.managed_files writes, judged the same way by the facts modules that plan without writing."""

import grp
import os
import pwd
import stat


def read_text(path: str):
    """The file's text (undecodable bytes replaced), or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def attributes_differ(path: str, owner: str, group: str, mode: str) -> bool:
    """Whether the existing ``path`` has another owner, group or mode (names must exist: KeyError otherwise)."""
    info = os.stat(path)
    return (info.st_uid != pwd.getpwnam(owner).pw_uid or info.st_gid != grp.getgrnam(group).gr_gid
            or stat.S_IMODE(info.st_mode) != int(mode, 8))


def missing_for(item: dict) -> list:
    """Why ``item`` ({path, owner, group}) cannot be written yet: an owner, group or directory that does not exist."""
    missing = []
    for kind, lookup, name in (("owner", pwd.getpwnam, item.get("owner", "root")),
                               ("group", grp.getgrnam, item.get("group", "root"))):
        try:
            lookup(name)
        except KeyError:
            missing.append("%s %s does not exist" % (kind, name))
    if not os.path.isdir(os.path.dirname(item["path"])):
        missing.append("directory %s does not exist" % os.path.dirname(item["path"]))
    return missing


def files_to_write(files: list) -> list:
    """The paths of ``files`` [{path, content, owner, group, mode}] whose content, owner, group or mode differs, or
    that cannot be written yet (their owner, group or directory is still to be made): what managed_files would
    write."""
    out = []
    for item in files or []:
        owner, group, mode = item.get("owner", "root"), item.get("group", "root"), item.get("mode", "0644")
        try:
            differs = bool(missing_for(item)) or read_text(item["path"]) != item["content"] or \
                attributes_differ(item["path"], owner, group, mode)
        except ValueError:  # a mode that is not octal: the write refuses it with the reason
            differs = True
        if differs:
            out.append(item["path"])
    return out
