# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kv_fabric_probe's arguments and failures, without NIXL (the real transfers: tests/integration/test_kv_fabric_nixl.py)."""

import os
import pwd

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import kv_fabric_probe

HANDOFF = {"agent": "t", "metadata": "", "bytes": 1 << 20, "receive": ["a", "b"], "send": "c"}


@pytest.mark.parametrize("args, says", [
    ({"mode": "target"}, "needs handoff_path"),
    ({"mode": "target", "handoff_path": "/run/x/h.json", "slots": 0}, "slots of at least 1"),
    ({"mode": "initiator"}, "needs the target's handoff"),
    ({"mode": "initiator", "handoff": {"agent": "t"}}, "needs the target's handoff"),
    ({"mode": "initiator", "handoff": HANDOFF, "slot": 2}, "slot 2 is not one of the target's 2 slot(s)"),
    ({"mode": "in_process", "size_mib": 0}, "size_mib and rounds must be at least 1"),
    ({"mode": "in_process", "timeout": 0}, "timeout greater than 0"),
])
def test_wrong_arguments_fail_before_nixl_is_imported(module_runner, args, says):
    def never(params):
        raise AssertionError("the probe ran")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_fabric_probe, "probe", never)
        result, failed = module_runner(kv_fabric_probe.main, args)
    assert failed and says in result["msg"], result


@pytest.mark.parametrize("error, says", [
    (ImportError("No module named 'nixl'"), "cannot import NIXL and torch (No module named 'nixl')"),
    (RuntimeError("WRITE between a and b ended ERR after 0.1 s"), "RuntimeError: WRITE between a and b ended ERR"),
])
def test_the_probe_failing_is_named(module_runner, error, says):
    def fails(params):
        raise error
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_fabric_probe, "probe", fails)
        result, failed = module_runner(kv_fabric_probe.main, {"mode": "in_process", "memory": "DRAM"})
    assert failed and says in result["msg"] and result["ucx_tail"] == []


def test_a_result_comes_back_with_its_line_and_ucx_tail_not_the_whole_output(module_runner):
    def probe(params):
        return {"memory": "DRAM", "bytes": 8 << 20, "transports": ["cma"], "emulated": False, "operations": [],
                "directions": [{"from": "a", "to": "b", "operation": "WRITE", "gbps": 4.2, "intact": True,
                                "seconds": [0.002]}], "ucx_output": "\n".join("line %d" % n for n in range(100))}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_fabric_probe, "probe", probe)
        result, failed = module_runner(kv_fabric_probe.main, {"mode": "in_process", "memory": "DRAM"})
    assert not failed and result["changed"] is False
    assert result["msg"] == "DRAM 8 MiB: a -> b WRITE 4.20 GB/s; through cma"
    assert result["ucx_tail"][0] == "line 40" and len(result["ucx_tail"]) == 60 and "ucx_output" not in result


def test_the_probe_runs_as_the_user_it_is_given_or_not_at_all(module_runner, tmp_path):
    """The probe's own process becomes the user first: a refusal fails the module and nothing moves; after the switch
    the probe runs there and its result comes back through the module (the module's process stays as it was)."""
    marker = tmp_path / "probed"

    def probe(params):
        marker.write_text("ran")
        return {"memory": "DRAM", "bytes": 1 << 20, "transports": ["tcp"], "emulated": False, "operations": [],
                "directions": [], "agent": "pid %d" % os.getpid(), "ucx_output": "switched"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_fabric_probe, "probe", probe)
        patch.setattr(kv_fabric_probe, "run_as", lambda user: "no user %s on this host" % user)
        result, failed = module_runner(kv_fabric_probe.main, {"mode": "in_process", "memory": "DRAM", "user": "sglang"})
        assert failed and result["msg"] == "the probe cannot run as sglang: no user sglang on this host"
        assert not marker.exists()
        patch.setattr(kv_fabric_probe, "run_as", lambda user: None)
        result, failed = module_runner(kv_fabric_probe.main, {"mode": "in_process", "memory": "DRAM", "user": "sglang"})
    assert not failed and marker.read_text() == "ran" and result["ucx_tail"] == ["switched"]
    assert result["agent"] != "pid %d" % os.getpid()  # another process
    assert result["user"] == pwd.getpwuid(os.geteuid()).pw_name  # run_as was a double: the child stayed who it was


@pytest.mark.parametrize("error, says", [
    (ImportError("No module named 'nixl'"), "cannot import NIXL and torch (No module named 'nixl')"),
    (RuntimeError("WRITE ended ERR"), "the NIXL probe failed: RuntimeError: WRITE ended ERR"),
])
def test_a_failure_in_the_probes_process_is_named_as_in_the_modules_own(module_runner, error, says):
    def fails(params):
        raise error
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_fabric_probe, "probe", fails)
        patch.setattr(kv_fabric_probe, "run_as", lambda user: None)
        result, failed = module_runner(kv_fabric_probe.main, {"mode": "in_process", "memory": "DRAM", "user": "sglang"})
    assert failed and says in result["msg"] and result["ucx_tail"] == []
