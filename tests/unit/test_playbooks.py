# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml parses with every shipped inventory, and its tags select the right layers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
INVENTORIES = sorted(p.name for p in (ROOT / "inventories").iterdir() if p.is_dir())


def _playbook(*args):
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    env["ANSIBLE_NOCOLOR"] = "1"
    cmd = [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "site.yml", *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def _tasks(output):
    """(play hosts, task) pairs of --list-tasks, without the implicit argument-spec validation."""
    result = []
    play = None
    for line in output.splitlines():
        match = re.match(r"\s+play #\d+ \(([^)]*)\)", line)
        if match:
            play = match.group(1)
            continue
        stripped = line.strip()
        if play and stripped and not stripped.startswith("tasks:") and "TAGS:" in stripped \
                and "Validating arguments against arg spec" not in stripped:
            result.append((play, stripped.split("\t")[0]))
    return result


def test_inventories_found():
    assert {"blackwell", "local", "multinode"} <= set(INVENTORIES)


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_syntax_check(inventory):
    _playbook("-i", "inventories/%s" % inventory, "--syntax-check")


def test_router_tag_lists_only_router_tasks():
    tasks = _tasks(_playbook("-i", "inventories/blackwell", "--list-tasks", "--tags", "router"))
    assert tasks, "no task selected by --tags router"
    roles = set(task.split(" : ")[0] for _play, task in tasks if " : " in task)
    assert roles == {"pdserve.sglang.sglang_router"}, tasks
    # The preflight play's includes run, but only the router check is selected at run time.
    assert not any(play in ("sglang_prefill", "sglang_decode") for play, _task in tasks), tasks


def test_prefill_tag_does_not_touch_the_router():
    tasks = _tasks(_playbook("-i", "inventories/blackwell", "--list-tasks", "--tags", "prefill"))
    assert any(play == "sglang_prefill" for play, _task in tasks), tasks
    assert not any("sglang_router" in task for _play, task in tasks), tasks
    assert not any(play in ("sglang_decode", "sglang_router") for play, _task in tasks), tasks
