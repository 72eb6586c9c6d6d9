# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kv_fabric_probe with the real NIXL (1.3.0, CPU torch: scripts/setup.sh unpacks both into the machine cache) over
loopback, each side in a process of its own as Ansible runs a module: UCX prints to the process's own descriptors,
and a target and its initiator are two processes on two hosts."""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.validation import kv_fabric

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = pathlib.Path(os.environ.get("PDSERVE_CACHE", "/var/cache/pdserve")) / "kv-fabric-site"
MODULE = "ansible_collections.pdserve.sglang.plugins.modules.kv_fabric_probe"


@pytest.fixture(scope="module")
def environment():
    assert (SITE / "nixl").is_dir(), "%s lacks NIXL: run scripts/setup.sh" % SITE
    paths = [str(SITE), os.environ.get("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))]
    paths += [p for p in sys.path if p.endswith("site-packages")]  # ansible.module_utils for AnsibleModule
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def start(environment, tmp_path, name, args, python=sys.executable):
    """The module in a process of its own, as Ansible runs it: its arguments in a file, its JSON on stdout."""
    path = tmp_path / (name + ".args.json")
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    return subprocess.Popen([python, "-m", MODULE, str(path)], env=environment, cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def python_for_everyone():
    """An interpreter of this one's version whose standard library any user can read (a servers' venv is under /opt;
    this test's own may live under root's home), or None."""
    for python in ("/usr/bin/python3", sys.executable):
        # Where it finds its standard library when root starts it (as the module is), read as nobody.
        stdlib = subprocess.run([python, "-c", "import os, sys; print('%d.%d' % sys.version_info[:2]); "
                                 "print(os.path.dirname(os.__file__))"], capture_output=True, text=True, check=False)
        lines = stdlib.stdout.split()
        if stdlib.returncode != 0 or len(lines) != 2 or lines[0] != "%d.%d" % sys.version_info[:2]:
            continue
        readable = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "test", "-r",
                                   os.path.join(lines[1], "glob.py")], check=False)
        if readable.returncode == 0:
            return python
    return None


def finish(process, timeout=120):
    out, err = process.communicate(timeout=timeout)
    try:
        return json.loads(out)
    except ValueError:
        pytest.fail("the module's stdout is not its JSON alone (exit %s):\n%s\nstderr:\n%s" % (process.returncode, out, err))


def test_two_agents_in_one_process_move_host_memory_both_ways(environment, tmp_path):
    result = finish(start(environment, tmp_path, "one", {"mode": "in_process", "memory": "DRAM", "size_mib": 8,
                                                         "rounds": 3}))
    assert not result.get("failed"), result
    assert [(d["operation"], d["intact"]) for d in result["directions"]] == [("WRITE", True), ("WRITE", True)]
    assert all(d["gbps"] > 0 and len(d["seconds"]) == 3 for d in result["directions"])
    # Two agents of one host: UCX's shared-memory path for host memory, never emulation.
    assert result["transports"] and not result["emulated"], result["ucx_tail"]
    assert result["msg"].startswith("DRAM 8 MiB: pdserve-fabric-a -> pdserve-fabric-b WRITE")


def test_a_target_and_two_initiators_move_the_buffer_both_ways_and_the_target_checks_what_arrived(environment, tmp_path):
    handoff = tmp_path / "handoff.json"
    target = start(environment, tmp_path, "target", {"mode": "target", "name": "fabric-decode", "slots": 2,
                                                     "handoff_path": str(handoff), "memory": "DRAM", "size_mib": 4,
                                                     "timeout": 60})
    deadline = time.monotonic() + 60
    while not handoff.exists() and target.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert handoff.exists(), finish(target)
    assert oct(handoff.stat().st_mode & 0o777) == "0o600"
    given = json.loads(handoff.read_text(encoding="utf-8"))
    initiators = []
    for slot in (0, 1):
        initiators.append(finish(start(environment, tmp_path, "init%d" % slot, {
            "mode": "initiator", "name": "fabric-prefill-%d" % slot, "handoff": given, "slot": slot, "memory": "DRAM",
            "rounds": 2, "timeout": 60})))
    received = finish(target)
    assert not received.get("failed") and all(not r.get("failed") for r in initiators), (received, initiators)
    assert [(r["slot"], r["from"], r["intact"]) for r in received["received"]] == [
        (0, "fabric-prefill-0", True), (1, "fabric-prefill-1", True)] and received["missing_slots"] == []
    # The READ back is checked by each initiator; its WRITE by the target, joined by the report.
    assert [d["operation"] for d in initiators[0]["directions"]] == ["WRITE", "READ"]
    report = kv_fabric.pair_report(initiators, [received], expect=initiators[0]["transports"], min_gbps=0.001)
    assert report["problems"] == [] and len(report["lines"]) == 2, report
    # The same pairs judged against a transport they did not use, and a floor no loopback reaches.
    strict = kv_fabric.pair_report(initiators, [received], expect=["rc_mlx5"], min_gbps=10000)
    assert any("does not expect" in p for p in strict["problems"]) and any("below the floor" in p for p in strict["problems"])


def test_a_target_that_nobody_writes_into_says_which_slots_stayed_empty(environment, tmp_path):
    result = finish(start(environment, tmp_path, "lonely", {"mode": "target", "name": "fabric-decode", "slots": 1,
                                                            "handoff_path": str(tmp_path / "h.json"), "memory": "DRAM",
                                                            "size_mib": 1, "timeout": 2}))
    assert result["received"] == [] and result["missing_slots"] == [0]
    [problem] = kv_fabric.pair_report([], [result])["problems"]
    assert "slot 0 received nothing" in problem


def test_an_interpreter_without_nixl_is_named(environment, tmp_path):
    bare = dict(environment, PYTHONPATH=os.pathsep.join(p for p in environment["PYTHONPATH"].split(os.pathsep)
                                                        if p != str(SITE)))
    result = finish(start(bare, tmp_path, "bare", {"mode": "in_process", "memory": "DRAM", "size_mib": 1}))
    assert result["failed"] and "cannot import NIXL and torch" in result["msg"]


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping root needs root (as Ansible starts the probe)")
def test_started_as_root_the_probe_moves_the_buffer_as_the_user_it_is_given(environment, tmp_path):
    """As the role runs it: started as root with user, both sides drop root before NIXL loads; the handoff is written
    by that user into its own directory, and the pair moves its data intact."""
    import pwd
    import shutil
    import tempfile

    python = python_for_everyone()
    if python is None:
        pytest.skip("no Python %d.%d that user nobody can run (the probe's own user needs its interpreter)"
                    % sys.version_info[:2])
    nobody = pwd.getpwnam("nobody")
    directory = tempfile.mkdtemp(prefix="pdserve-fabric-user-")
    try:
        os.chown(directory, nobody.pw_uid, nobody.pw_gid)
        os.chmod(directory, 0o700)
        handoff = pathlib.Path(directory) / "handoff.json"
        target = start(environment, tmp_path, "target", {"mode": "target", "name": "fabric-decode", "slots": 1,
                                                         "handoff_path": str(handoff), "memory": "DRAM", "size_mib": 1,
                                                         "timeout": 60, "user": "nobody"}, python)
        deadline = time.monotonic() + 60
        while not handoff.exists() and target.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert handoff.exists(), finish(target)
        assert handoff.stat().st_uid == nobody.pw_uid
        sent = finish(start(environment, tmp_path, "init", {
            "mode": "initiator", "name": "fabric-prefill", "handoff": json.loads(handoff.read_text(encoding="utf-8")),
            "slot": 0, "memory": "DRAM", "rounds": 1, "timeout": 60, "user": "nobody"}, python))
        received = finish(target)
        assert not sent.get("failed") and not received.get("failed"), (sent, received)
        assert [r["intact"] for r in received["received"]] == [True] and sent["directions"][1]["intact"]
        assert sent["user"] == received["user"] == "nobody"
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    # A user the host does not have fails before anything moves.
    result = finish(start(environment, tmp_path, "nouser", {"mode": "in_process", "memory": "DRAM", "size_mib": 1,
                                                            "user": "pdserve-no-such-user"}))
    assert result["failed"] and "no user pdserve-no-such-user on this host" in result["msg"]
