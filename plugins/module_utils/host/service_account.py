# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The service account of the serving processes: what to change, decided from what the host has.

``plan`` is pure: it compares the wanted account (group, user, home, shell, supplementary groups,
configuration directory) with the host's current state and returns the commands and directory
changes that make them agree, in order. ``read_state`` reads that state on the host. The module
service_account runs the plan; managed_files and install_facts only ask ``differs`` (read-only), so an
unchanged host needs no call of its own for its account.
"""

import grp
import os
import pwd
import stat
from typing import Any, Dict, List, Optional, Tuple

# The wanted account's keys and their defaults where the caller may leave them out.
ACCOUNT_DEFAULTS: Dict[str, Any] = {"shell": "/usr/sbin/nologin", "extra_groups": [], "config_dir": None, "config_mode": "0750"}


def _name(lookup, ident: int, attr: str) -> str:
    try:
        return getattr(lookup(ident), attr)
    except KeyError:
        return str(ident)


def read_state(want: Dict[str, Any]) -> Dict[str, Any]:
    """The host's side of ``plan`` for the account ``want`` (name, home, config_dir)."""
    names = set(g.gr_name for g in grp.getgrall())
    user = None
    try:
        entry = pwd.getpwnam(want["name"])
    except KeyError:
        entry = None
    if entry is not None:
        user = {"gid_name": _name(grp.getgrgid, entry.pw_gid, "gr_name"), "home": entry.pw_dir, "shell": entry.pw_shell,
                "groups": [g.gr_name for g in grp.getgrall() if want["name"] in g.gr_mem]}
    dirs = {}  # type: Dict[str, Optional[Dict[str, str]]]
    for path in (want["home"], want.get("config_dir")):
        if not path:
            continue
        try:
            info = os.stat(path)
        except OSError:
            dirs[path] = None
            continue
        dirs[path] = {"owner": _name(pwd.getpwuid, info.st_uid, "pw_name"), "group": _name(grp.getgrgid, info.st_gid, "gr_name"),
                      "mode": "%04o" % stat.S_IMODE(info.st_mode)}
    return {"groups": names, "user": user, "dirs": dirs}


def differs(account: Optional[Dict[str, Any]]) -> Optional[bool]:
    """Whether the service_account module would change anything for ``account``; None without an account."""
    if not account:
        return None
    want = dict(ACCOUNT_DEFAULTS)
    want.update((k, v) for k, v in account.items() if v is not None)
    commands, directories, _skipped = plan(want, read_state(want))
    return bool(commands or directories)


def plan(want: Dict[str, Any], have: Dict[str, Any]) -> Tuple[List[List[str]], List[Dict[str, Any]], List[str]]:
    """``(commands, directories, skipped_groups)``.

    ``want``: name, group, home, shell, extra_groups, config_dir (or None), config_mode.
    ``have``: groups (set of existing group names), user (None or {gid_name, home, shell, groups}),
    dirs ({path: None or {owner, group, mode}}).
    ``commands``: argv lists (groupadd, useradd, usermod). ``directories``: [{path, owner, group, mode,
    create}] to create or fix. ``skipped_groups``: wanted supplementary groups the host does not have.
    """
    commands = []
    groups = set(have["groups"])
    if want["group"] not in groups:
        commands.append(["groupadd", "--system", want["group"]])
        groups.add(want["group"])
    extra = [g for g in want.get("extra_groups") or [] if g in groups and g != want["group"]]
    skipped = [g for g in want.get("extra_groups") or [] if g not in groups]
    user = have.get("user")
    if user is None:
        argv = ["useradd", "--system", "--gid", want["group"], "--home-dir", want["home"], "--create-home",
                "--shell", want["shell"]]
        if extra:
            argv += ["--groups", ",".join(extra)]
        commands.append(argv + [want["name"]])
    else:
        change = []
        if user["gid_name"] != want["group"]:
            change += ["--gid", want["group"]]
        if user["home"] != want["home"]:
            change += ["--home", want["home"]]
        if user["shell"] != want["shell"]:
            change += ["--shell", want["shell"]]
        missing = [g for g in extra if g not in user["groups"]]
        if missing:
            change += ["--append", "--groups", ",".join(missing)]
        if change:
            commands.append(["usermod"] + change + [want["name"]])
    directories = []
    wanted_dirs = [{"path": want["home"], "owner": want["name"], "group": want["group"], "mode": "0750", "only_create": True}]
    if want.get("config_dir"):
        wanted_dirs.append({"path": want["config_dir"], "owner": "root", "group": want["group"],
                            "mode": want.get("config_mode") or "0750", "only_create": False})
    for item in wanted_dirs:
        current = have["dirs"].get(item["path"])
        if current is None:
            directories.append(dict(item, create=True))
        elif not item["only_create"] and (current["owner"], current["group"], current["mode"]) != (
                item["owner"], item["group"], item["mode"]):
            directories.append(dict(item, create=False))
    return commands, directories, skipped


def run_as(user: str, ids: Any = os) -> Optional[str]:
    """Become ``user`` for the rest of this process (its primary and supplementary groups, HOME, and ``/`` as the
    working directory, as a unit's process starts): why not, or None once done or where it already is that user.

    For a probe a module runs as root only to be allowed to start: it drops root before it touches memory or the network.
    Whatever the module still imports afterwards must be readable by ``user`` (Ansible's payload is root's alone), so
    the caller imports first. ``ids``: the os functions (a test passes a double)."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return "no user %s on this host (the install layer creates the service user; create it first)" % user
    if ids.geteuid() == entry.pw_uid:
        return None
    if ids.geteuid() != 0:
        return "only root can switch to %s, and this runs as uid %d" % (user, ids.geteuid())
    ids.initgroups(user, entry.pw_gid)
    ids.setgid(entry.pw_gid)
    ids.setuid(entry.pw_uid)
    if ids.geteuid() != entry.pw_uid or ids.getuid() != entry.pw_uid:
        return "still uid %d after setuid(%d)" % (ids.geteuid(), entry.pw_uid)
    ids.environ.update(HOME=entry.pw_dir, USER=user, LOGNAME=user)
    ids.chdir("/")
    return None
