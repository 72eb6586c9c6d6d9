# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""service_account through main(), in check mode only: it reads this machine's accounts and runs nothing."""

import functools
import grp
import os
import pwd

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import service_account


@pytest.fixture
def run(module_runner):
    return functools.partial(module_runner, service_account.main)


def test_check_mode_plans_a_missing_account_and_runs_nothing(run, tmp_path):
    name = "pdserve-no-such-user"
    result, failed = run({"name": name, "group": name, "home": str(tmp_path / "home"),
                          "config_dir": str(tmp_path / "etc"), "_ansible_check_mode": True})
    assert not failed, result
    assert result["changed"] is True
    assert [c[0] for c in result["commands"]] == ["groupadd", "useradd"]
    assert result["directories"] == [str(tmp_path / "home"), str(tmp_path / "etc")]
    assert not os.path.exists(str(tmp_path / "home"))
    with pytest.raises(KeyError):
        pwd.getpwnam(name)


def test_an_existing_account_that_matches_changes_nothing(run, tmp_path):
    me = pwd.getpwuid(os.getuid())
    group = grp.getgrgid(me.pw_gid).gr_name
    config = tmp_path / "etc"
    config.mkdir()
    os.chown(str(config), 0, me.pw_gid)
    config.chmod(0o750)
    result, failed = run({"name": me.pw_name, "group": group, "home": me.pw_dir, "shell": me.pw_shell,
                          "config_dir": str(config), "extra_groups": ["pdserve-no-such-group"],
                          "_ansible_check_mode": True})
    assert not failed, result
    assert result["changed"] is False and result["commands"] == [] and result["directories"] == []
    assert result["skipped_groups"] == ["pdserve-no-such-group"]
