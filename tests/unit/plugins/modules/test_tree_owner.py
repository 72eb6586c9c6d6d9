# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tree_owner run through main(): converts, reports, is idempotent, supports check mode, fails with what to fix."""

import grp
import os
import pwd
import stat

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import tree_owner

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


@pytest.fixture
def run(module_runner):
    def _run(args, check_mode=False):
        return module_runner(tree_owner.main, args, check_mode=check_mode)
    return _run


def venv(tmp_path):
    top = tmp_path / "venv"
    (top / "lib").mkdir(parents=True)
    (top / "lib" / "m.py").write_text("")
    os.chmod(top / "lib" / "m.py", 0o664)
    return top


def args(top, **extra):
    return dict({"path": str(top), "owner": ME, "group": MY_GROUP, "from_owner": ME}, **extra)


def test_converts_then_reports_no_change(run, tmp_path):
    top = venv(tmp_path)
    result, failed = run(args(top), check_mode=True)
    assert not failed and result["changed"] is True and result["msg"].startswith("%s: would give 1 entries" % top)
    assert stat.S_IMODE(os.stat(top / "lib" / "m.py").st_mode) == 0o664
    result, failed = run(args(top))
    assert not failed and result["changed"] is True and result["converted"] == 1 and result["others"] == 0
    assert stat.S_IMODE(os.stat(top / "lib" / "m.py").st_mode) == 0o644
    result, failed = run(args(top))
    assert not failed and result["changed"] is False and "nothing of %s to convert" % ME in result["msg"]


def test_a_missing_old_owner_owns_nothing(run, tmp_path):
    result, failed = run(args(venv(tmp_path), from_owner="pdserve-no-such-user"))
    assert not failed and result["changed"] is False and "does not exist, nothing to convert" in result["msg"]


def test_bad_input_fails_with_what_to_fix(run, tmp_path):
    result, failed = run(args(venv(tmp_path), owner="pdserve-no-such-user"))
    assert failed and "no such user or group" in result["msg"]
    result, failed = run(args(tmp_path / "absent"))
    assert failed and result["msg"].startswith("tree_owner: cannot convert %s" % (tmp_path / "absent"))
