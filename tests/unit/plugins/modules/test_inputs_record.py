# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""inputs_record run through main(): compare, write after success, check mode, diff, tree hashes."""

import grp
import json
import os
import pwd
import stat

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import inputs_record

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


@pytest.fixture
def run(module_runner):
    def _run(args, check_mode=False, diff=False):
        if diff:
            args = dict(args, _ansible_diff=True)
        return module_runner(inputs_record.main, args, check_mode=check_mode)
    return _run


def write_args(path, inputs, **extra):
    return dict({"path": str(path), "inputs": inputs, "write": True, "owner": ME, "group": MY_GROUP}, **extra)


def test_no_record_then_write_then_unchanged(run, tmp_path):
    path = tmp_path / "record.json"
    inputs = {"arch_list": "12.0", "env": {"A": "1"}, "torch": "2.14.1"}
    result, failed = run({"path": str(path), "inputs": inputs})
    assert not failed and result["changed"] is False
    assert result["record_found"] is False and result["recorded"] is None
    assert result["differs"] == ["arch_list", "env", "torch"]
    assert result["message"] == "no record of an earlier run: running"
    assert not path.exists()

    result, failed = run(write_args(path, result["current"]))
    assert not failed and result["changed"] is True and result["message"] == "record written"
    assert json.loads(path.read_text()) == inputs
    assert stat.S_IMODE(path.stat().st_mode) == 0o644

    result = run({"path": str(path), "inputs": inputs})[0]
    assert result["differs"] == [] and result["record_found"] is True
    assert result["message"] == "inputs unchanged since the last run: skipped"
    result = run(write_args(path, inputs))[0]
    assert result["changed"] is False and result["message"] == "record unchanged"


def test_changed_inputs_are_named(run, tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"arch_list": "12.0", "torch": "2.14.1", "old_key": 1}))
    result = run({"path": str(path), "inputs": {"arch_list": "9.0", "torch": "2.14.1", "cuda": "13.0"}})[0]
    assert result["differs"] == ["arch_list", "cuda"]
    assert result["message"] == "inputs changed (arch_list, cuda): running"


def test_check_mode_writes_nothing_and_diff_shows_the_record(run, tmp_path):
    path = tmp_path / "record.json"
    result, failed = run(write_args(path, {"a": 1}), check_mode=True, diff=True)
    assert not failed and result["changed"] is True
    assert not path.exists()
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"]) == {"a": 1}
    # A user that does not exist yet (created by the same run) is fine in check mode only.
    result, failed = run(write_args(path, {"a": 1}, owner="pdserve-no-such-user"), check_mode=True)
    assert not failed and result["changed"] is True
    result, failed = run(write_args(path, {"a": 1}, owner="pdserve-no-such-user"))
    assert failed and "does not exist" in result["msg"]


def test_mode_change_rewrites(run, tmp_path):
    path = tmp_path / "record.json"
    run(write_args(path, {"a": 1}))
    result = run(write_args(path, {"a": 1}, mode="0600"))[0]
    assert result["changed"] is True and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_trees_are_hashed_into_the_inputs(run, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "setup.py").write_text("print(1)\n")
    path = tmp_path / "record.json"
    args = {"path": str(path), "inputs": {"src": str(src)}, "trees": {"tree_sha256": str(src)}}
    first = run(args)[0]
    assert len(first["current"]["tree_sha256"]) == 64
    run(write_args(path, first["current"]))
    assert run(args)[0]["differs"] == []
    (src / "setup.py").write_text("print(2)\n")
    assert run(args)[0]["differs"] == ["tree_sha256"]
    missing = run(dict(args, trees={"tree_sha256": str(tmp_path / "absent")}))[0]
    assert missing["current"]["tree_sha256"] == ""


def test_a_broken_record_counts_as_none(run, tmp_path, monkeypatch):
    from ansible.module_utils import basic
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    path = tmp_path / "record.json"
    path.write_text("{truncated")
    result, failed = run({"path": str(path), "inputs": {"a": 1}})
    assert not failed and result["record_found"] is False and result["differs"] == ["a"]
    assert warnings and "counts as no record" in warnings[0]


@pytest.mark.parametrize("args, message", [
    ({"path": "relative.json", "inputs": {}}, "is not absolute"),
    ({"inputs": {}, "mode": "rw-r--r--"}, "is not an octal string"),
])
def test_bad_arguments(run, tmp_path, args, message):
    args = dict({"path": str(tmp_path / "r.json")}, **args)
    result, failed = run(args)
    assert failed and message in result["msg"]


def test_writing_into_a_missing_directory_fails(run, tmp_path):
    result, failed = run(write_args(tmp_path / "absent" / "record.json", {"a": 1}))
    assert failed and "directory" in result["msg"] and "does not exist" in result["msg"]
