# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml parses with every shipped inventory, and its tags select the right layers."""

import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

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


VALIDATE = "Wait for the router's workers (and this host's own servers), validate chat, print the summary"


def test_router_tag_lists_only_router_tasks_and_ends_validated():
    tasks = _tasks(_playbook("-i", "inventories/blackwell", "--list-tasks", "--tags", "router"))
    assert tasks, "no task selected by --tags router"
    roles = set(task.split(" : ")[0] for _play, task in tasks if " : " in task)
    # The router and, on router hosts of a shared virtual address, keepalived (the address follows the router).
    assert roles == {"pdserve.sglang.sglang_router", "pdserve.sglang.sglang_router_address"}, tasks
    # The first play judges the host; no prefill or decode play has a task, and the run ends validated.
    assert not any(play in ("sglang_prefill", "sglang_decode") for play, _task in tasks), tasks
    assert tasks[-1] == ("sglang_router", VALIDATE), tasks


SERVERS = "sglang_prefill:sglang_decode"
PLAY_MODES = "{{ group_names | pdserve.sglang.play_modes(ansible_run_tags, ansible_skip_tags) }}"


@pytest.mark.parametrize("tag", ["prefill", "decode"])
def test_server_tags_deploy_servers_and_end_validated(tag):
    tasks = _tasks(_playbook("-i", "inventories/blackwell", "--list-tasks", "--tags", tag))
    # One play deploys and one waits for both modes of a host; which modes follows the run's tags (play_modes below).
    assert any(play == SERVERS and "sglang_server : Create the account, check the command lines and write" in task
               for play, task in tasks), tasks
    # The router is not configured, only asked whether it sees its workers, then chat is validated.
    assert not any(task.startswith("pdserve.sglang.sglang_router :") for _play, task in tasks), tasks
    assert (SERVERS, "Wait for this host's model servers at once") in tasks, tasks
    assert tasks[-1] == ("sglang_router", VALIDATE), tasks


def test_the_server_plays_take_their_modes_from_the_run_tags():
    """The deploy play and the wait play both ask play_modes which of a host's modes this run selects."""
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    deploy = [play for play in site if play.get("hosts") == SERVERS
              and "pdserve.sglang.sglang_server" in [role.get("role") for role in play.get("roles", [])]]
    assert len(deploy) == 1 and sorted(deploy[0]["tags"]) == ["decode", "prefill"], deploy
    assert deploy[0]["roles"][0]["vars"]["sglang_server_modes"] == PLAY_MODES
    validate = yaml.safe_load((ROOT / "playbooks" / "validate.yml").read_text())
    wait = [play for play in validate if play.get("hosts") == SERVERS]
    assert len(wait) == 1 and wait[0]["tasks"][0]["vars"]["sglang_server_wait_modes"] == PLAY_MODES


@pytest.mark.parametrize("args,both_groups,decode_only", [
    ([], ["prefill", "decode"], ["decode"]),
    (["--tags", "prefill"], ["prefill"], []),
    (["--tags", "decode"], ["decode"], ["decode"]),
    (["--tags", "prefill,decode"], ["prefill", "decode"], ["decode"]),
    (["--tags", "validate"], ["prefill", "decode"], ["decode"]),
    (["--tags", "configure"], ["prefill", "decode"], ["decode"]),
    (["--skip-tags", "decode"], ["prefill"], []),
])
def test_play_modes_under_the_run_tags_ansible_sets(tmp_path, args, both_groups, decode_only):
    """play_modes as the playbooks call it, with the ansible_run_tags and ansible_skip_tags a real run sets: a host in
    both groups and a decode-only host."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "sglang_prefill": {"hosts": {"both": None}}, "sglang_decode": {"hosts": {"both": None, "decoder": None}}}}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False, "connection": "local",
        "tasks": [{"name": "Modes", "ansible.builtin.debug": {"msg": "MODES %s [{{ (%s) | join(',') }}]" % (
            "{{ inventory_hostname }}", PLAY_MODES[3:-3])}, "tags": ["always"]}]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "play.yml"),
                           "-i", str(tmp_path / "hosts.yml"), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    found = dict(re.findall(r"MODES (\w+) (\[[^\]]*\])", proc.stdout))
    assert {host: [m for m in value[1:-1].split(",") if m] for host, value in found.items()} \
        == {"both": both_groups, "decoder": decode_only}, proc.stdout


def test_preflight_tag_only_judges():
    output = _playbook("-i", "inventories/multinode", "--list-tasks", "--tags", "preflight")
    names = [task for _play, task in _tasks(output)]
    assert "Judge a host with model servers (and its router, if it has one)" in names, names
    assert "Judge a router host" in names, names
    assert "Judge the install settings against the host" in names, names
    # Every task selected carries the preflight tag (argument validation aside): nothing that changes a host.
    for line in output.splitlines():
        if "TAGS: [" in line and "Validating arguments" not in line and not line.lstrip().startswith("play #"):
            assert "preflight" in line.split("TAGS: [", 1)[1], line
