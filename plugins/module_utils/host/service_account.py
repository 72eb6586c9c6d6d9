# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The service account of the serving processes: what to change, decided from what the host has.

``plan`` is pure: it compares the wanted account (group, user, home, shell, supplementary groups,
configuration directory) with the host's current state and returns the commands and directory
changes that make them agree, in order. The module service_account reads the state and runs them.
"""

from typing import Any, Dict, List, Tuple


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
