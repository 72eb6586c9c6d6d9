# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml parses with every shipped inventory, and its tags select the right layers."""

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


VALIDATE = "Wait for the router's workers, validate chat, print the summary"


def test_router_tag_lists_only_router_tasks_and_ends_validated():
    tasks = _tasks(_playbook("-i", "inventories/blackwell", "--list-tasks", "--tags", "router"))
    assert tasks, "no task selected by --tags router"
    roles = set(task.split(" : ")[0] for _play, task in tasks if " : " in task)
    assert roles == {"pdserve.sglang.sglang_router"}, tasks
    # The first play judges the host; no prefill or decode play has a task, and the run ends validated.
    assert not any(play in ("sglang_prefill", "sglang_decode") for play, _task in tasks), tasks
    assert tasks[-1] == ("sglang_router", VALIDATE), tasks


@pytest.mark.parametrize("tag,mode", [("prefill", "prefill"), ("decode", "decode")])
def test_server_tags_touch_only_their_mode_and_end_validated(tag, mode):
    tasks = _tasks(_playbook("-i", "inventories/blackwell", "--list-tasks", "--tags", tag))
    other = "decode" if mode == "prefill" else "prefill"
    assert any(play == "sglang_" + mode and "sglang_server : Write" in task for play, task in tasks), tasks
    assert not any(play == "sglang_" + other for play, _task in tasks), tasks
    # The router is not configured, only asked whether it sees its workers, then chat is validated.
    assert not any(task.startswith("pdserve.sglang.sglang_router :") for _play, task in tasks), tasks
    assert ("sglang_" + mode, "Wait for this host's %s servers at once" % mode) in tasks, tasks
    assert tasks[-1] == ("sglang_router", VALIDATE), tasks


def test_preflight_tag_only_judges():
    output = _playbook("-i", "inventories/multinode", "--list-tasks", "--tags", "preflight")
    names = [task for _play, task in _tasks(output)]
    assert "Judge a host with model servers (and its router, if it has one)" in names, names
    assert "Judge a router-only host" in names, names
    assert "Judge the install settings against the host" in names, names
    # Every task selected carries the preflight tag (argument validation aside): nothing that changes a host.
    for line in output.splitlines():
        if "TAGS: [" in line and "Validating arguments" not in line and not line.lstrip().startswith("play #"):
            assert "preflight" in line.split("TAGS: [", 1)[1], line
