# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""managed_files run through main() with exit_json/fail_json patched, against files in tmp_path owned by the
current user and group."""

import grp
import os
import pwd
import stat

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import managed_files

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name
MARKER = "# pdserve.sglang.sglang_server mode=decode"


@pytest.fixture
def run(module_runner):
    """run(args, check_mode=False, diff=False) -> (result, failed) of managed_files.main()."""
    def go(args, check_mode=False, diff=False):
        if diff:
            args = dict(args, _ansible_diff=True)
        return module_runner(managed_files.main, args, check_mode)
    return go


def entry(path, content, mode="0644"):
    return {"path": str(path), "content": content, "owner": USER, "group": GROUP, "mode": mode}


def write(path, content, mode=0o644):
    path.write_text(content)
    path.chmod(mode)
    return str(path)


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_writes_only_what_differs(run, tmp_path):
    same = write(tmp_path / "a.env", "A=1\n", 0o640)
    older = write(tmp_path / "b.service", "old\n")
    before = os.stat(same).st_mtime_ns, os.stat(same).st_ino
    files = [entry(same, "A=1\n", "0640"), entry(older, "new\n"), entry(tmp_path / "c.env", "C=1\n", "0600")]
    result, failed = run({"files": files})
    assert failed is False, result
    assert result["changed"] is True
    assert result["changed_paths"] == [older, str(tmp_path / "c.env")]
    assert result["stale"] == [] and result["removed"] == []
    assert (tmp_path / "b.service").read_text() == "new\n"
    assert (tmp_path / "c.env").read_text() == "C=1\n"
    assert (os.stat(same).st_mtime_ns, os.stat(same).st_ino) == before
    assert mode_of(same) == 0o640
    assert mode_of(older) == 0o644
    assert mode_of(tmp_path / "c.env") == 0o600
    assert "diff" not in result
    # No temporary files left behind.
    assert sorted(os.listdir(str(tmp_path))) == ["a.env", "b.service", "c.env"]


@pytest.mark.parametrize("old_mode, new_mode", [(0o644, "0600"), (0o600, "0644"), (0o755, "0640")])
def test_a_rewritten_file_gets_the_asked_mode(run, tmp_path, old_mode, new_mode):
    path = write(tmp_path / "u.service", "old\n", old_mode)
    result, failed = run({"files": [entry(path, "new\n", new_mode)]})
    assert failed is False and result["changed_paths"] == [path]
    assert mode_of(path) == int(new_mode, 8)
    assert run({"files": [entry(path, "new\n", new_mode)]})[0]["changed"] is False


def test_second_run_is_idempotent(run, tmp_path):
    files = [entry(tmp_path / "x.env", 'K="v"\n', "0640"), entry(tmp_path / "x.service", "[Unit]\n")]
    first, dummy_failed = run({"files": files})
    assert first["changed"] is True and len(first["changed_paths"]) == 2
    second, failed = run({"files": files})
    assert failed is False
    assert second["changed"] is False and second["changed_paths"] == [] and second["removed"] == []


def test_only_the_mode_differs(run, tmp_path):
    path = write(tmp_path / "m.env", "A=1\n", 0o644)
    result, dummy_failed = run({"files": [entry(path, "A=1\n", "0640")]}, diff=True)
    assert result["changed"] is True and result["changed_paths"] == [path]
    assert mode_of(path) == 0o640
    assert result["diff"] == []  # the content did not change


def test_check_mode_writes_nothing_but_reports(run, tmp_path):
    older = write(tmp_path / "b.service", "old\n", 0o644)
    files = [entry(older, "new\n"), entry(tmp_path / "c.env", "C=1\n", "0600"), entry(tmp_path / "b2.service", "x\n")]
    write(tmp_path / "b2.service", "x\n", 0o600)
    result, failed = run({"files": files}, check_mode=True, diff=True)
    assert failed is False
    assert result["changed"] is True
    assert result["changed_paths"] == [older, str(tmp_path / "c.env"), str(tmp_path / "b2.service")]
    assert (tmp_path / "b.service").read_text() == "old\n"
    assert not (tmp_path / "c.env").exists()
    assert mode_of(tmp_path / "b2.service") == 0o600
    assert result["diff"] == [
        {"before_header": older, "after_header": older, "before": "old\n", "after": "new\n"},
        {"before_header": str(tmp_path / "c.env"), "after_header": str(tmp_path / "c.env"), "before": "", "after": "C=1\n"},
    ]


def test_diff_masks_secret_values(run, tmp_path):
    path = write(tmp_path / "router.env", 'SGLANG_ROUTER_API_KEY="old-s3cret"\n', 0o640)
    stale = write(tmp_path / "gone.env", MARKER + '\nKEY="new-s3cret"\n')
    args = {"files": [entry(path, 'SGLANG_ROUTER_API_KEY="new-s3cret"\n', "0640")],
            "prune": [{"directory": str(tmp_path), "pattern": "*.env", "marker": MARKER}],
            "secret_values": ["old-s3cret", "new-s3cret", ""]}
    result, failed = run(args, diff=True)
    assert failed is False
    assert result["diff"] == [
        {"before_header": path, "after_header": path, "before": 'SGLANG_ROUTER_API_KEY="********"\n',
         "after": 'SGLANG_ROUTER_API_KEY="********"\n'},
        {"before_header": stale, "after_header": stale, "before": MARKER + '\nKEY="********"\n', "after": ""},
    ]
    assert "s3cret" not in repr(result)
    assert (tmp_path / "router.env").read_text() == 'SGLANG_ROUTER_API_KEY="new-s3cret"\n'


def prune_tree(tmp_path):
    units = tmp_path / "units"
    units.mkdir()
    paths = {
        "wanted": write(units / "sglang-decode.service", MARKER + "\n[Unit]\n"),
        "stale": write(units / "sglang-decode-old.service", "# Ansible managed\n" + MARKER + "\n[Unit]\n"),
        "unmarked": write(units / "sglang-handmade.service", "[Unit]\nDescription=not ours\n"),
        "other_mode": write(units / "sglang-prefill.service", "# pdserve.sglang.sglang_server mode=prefill\n"),
        "substring": write(units / "sglang-x.service", "# note: " + MARKER + "\n"),
        "other_name": write(units / "notes.txt", MARKER + "\n"),
    }
    (units / "sglang-dir.service").mkdir()
    return units, paths


def test_prune_finds_marked_stale_files_only(run, tmp_path):
    units, paths = prune_tree(tmp_path)
    args = {"files": [entry(paths["wanted"], MARKER + "\n[Unit]\n")],
            "prune": [{"directory": str(units), "pattern": "sglang-*.service", "marker": MARKER}]}
    result, failed = run(args)
    assert failed is False
    assert result["stale"] == [paths["stale"]]
    assert result["removed"] == [paths["stale"]]
    assert result["changed"] is True and result["changed_paths"] == []
    assert not os.path.exists(paths["stale"])
    for key in ("wanted", "unmarked", "other_mode", "substring", "other_name"):
        assert os.path.exists(paths[key]), key
    again, dummy_failed = run(args)
    assert again["changed"] is False and again["stale"] == []


def test_prune_in_check_mode_reports_and_keeps(run, tmp_path):
    units, paths = prune_tree(tmp_path)
    args = {"files": [entry(paths["wanted"], MARKER + "\n[Unit]\n")],
            "prune": [{"directory": str(units), "pattern": "sglang-*.service", "marker": MARKER}]}
    result, failed = run(args, check_mode=True)
    assert failed is False
    assert result["changed"] is True and result["removed"] == [paths["stale"]]
    assert os.path.exists(paths["stale"])


def test_remove_stale_false_reports_only(run, tmp_path):
    units, paths = prune_tree(tmp_path)
    args = {"files": [entry(paths["wanted"], MARKER + "\n[Unit]\n")], "remove_stale": False,
            "prune": [{"directory": str(units), "pattern": "sglang-*.service", "marker": MARKER}]}
    result, failed = run(args)
    assert failed is False
    assert result["stale"] == [paths["stale"]] and result["removed"] == []
    assert result["changed"] is False
    assert os.path.exists(paths["stale"])


def test_prune_several_places_and_a_missing_directory(run, tmp_path):
    units, paths = prune_tree(tmp_path)
    conf = tmp_path / "conf"
    conf.mkdir()
    env = write(conf / "decode-old.env", MARKER + "\n")
    args = {"files": [entry(paths["wanted"], MARKER + "\n[Unit]\n")],
            "prune": [{"directory": str(units), "pattern": "sglang-*.service", "marker": MARKER},
                      {"directory": str(conf), "pattern": "*.env", "marker": MARKER},
                      {"directory": str(tmp_path / "absent"), "pattern": "*", "marker": MARKER},
                      {"directory": str(units), "pattern": "*", "marker": MARKER}]}
    result, failed = run(args, check_mode=True)
    assert failed is False
    assert result["stale"] == [paths["stale"], env, paths["other_name"]]


def test_check_mode_with_a_missing_directory_reports_instead_of_failing(run, tmp_path):
    path = str(tmp_path / "not-yet" / "sglang-decode.service")
    result, failed = run({"files": [entry(tmp_path / "not-yet" / "sglang-decode.service", "[Unit]\n")]}, check_mode=True, diff=True)
    assert failed is False, result
    assert result["changed"] is True and result["changed_paths"] == [path]
    assert result["diff"] == [{"before_header": path, "after_header": path, "before": "", "after": "[Unit]\n"}]
    assert not (tmp_path / "not-yet").exists()


def test_check_mode_with_a_missing_owner_reports_instead_of_failing(run, tmp_path):
    path = write(tmp_path / "u.service", "[Unit]\n")
    item = dict(entry(path, "[Unit]\n"), owner="no-such-user-pdserve", group="no-such-group-pdserve")
    result, failed = run({"files": [item]}, check_mode=True)
    assert failed is False
    assert result["changed_paths"] == [path]


def test_a_missing_directory_fails_in_a_real_run(run, tmp_path):
    path = str(tmp_path / "not-yet" / "sglang-decode.service")
    result, failed = run({"files": [entry(tmp_path / "not-yet" / "sglang-decode.service", "[Unit]\n")]})
    assert failed is True
    assert result["msg"] == "cannot write %s: directory %s does not exist" % (path, str(tmp_path / "not-yet"))


def test_a_missing_owner_and_group_fail_in_a_real_run(run, tmp_path):
    path = str(tmp_path / "u.service")
    item = dict(entry(path, "[Unit]\n"), owner="no-such-user-pdserve", group="no-such-group-pdserve")
    result, failed = run({"files": [item]})
    assert failed is True
    assert result["msg"] == "cannot write %s: owner no-such-user-pdserve does not exist, group no-such-group-pdserve does not exist" % path
    assert not os.path.exists(path)


def test_nothing_is_written_when_one_file_cannot_be(run, tmp_path):
    good = str(tmp_path / "good.env")
    result, failed = run({"files": [entry(good, "A=1\n"), entry(tmp_path / "nodir" / "bad.env", "B=1\n")]})
    assert failed is True
    assert not os.path.exists(good)


def test_relative_path_and_bad_mode(run, tmp_path):
    result, failed = run({"files": [dict(entry(tmp_path / "x", "x"), path="relative/x")]})
    assert failed is True and result["msg"] == "path relative/x is not absolute"
    path = str(tmp_path / "x")
    result, failed = run({"files": [entry(path, "x", "rw-r--r--")]})
    assert failed is True and result["msg"] == "%s: mode 'rw-r--r--' is not an octal string such as '0644'" % path
    assert not os.path.exists(path)


def test_services_say_which_units_restart_and_why(run, tmp_path):
    unit_a = write(tmp_path / "sglang-a.service", "[Service]\nExecStart=/v1/bin/python \\\n    --port \"1\"\n")
    env_a = write(tmp_path / "a.env", 'PDSERVE_SGLANG="0.5.23"\nPDSERVE_VENV="/v1"\n', 0o640)
    unit_b = write(tmp_path / "sglang-b.service", "[Service]\nRestartSec=10\n")
    env_b = write(tmp_path / "b.env", 'K="secret-1"\n', 0o640)
    files = [entry(unit_a, "[Service]\nExecStart=/v2/bin/python \\\n    --port \"1\"\n"),
             entry(env_a, 'PDSERVE_SGLANG="0.5.24"\nPDSERVE_VENV="/v2"\n', "0640"),
             entry(unit_b, "[Service]\nRestartSec=10\n"), entry(env_b, 'K="secret-2"\n', "0640"),
             entry(tmp_path / "sglang-c.service", "[Service]\n"), entry(tmp_path / "c.env", "", "0640")]
    services = [{"unit": "sglang-a.service", "unit_path": unit_a, "env_file": env_a},
                {"unit": "sglang-b.service", "unit_path": unit_b, "env_file": env_b},
                {"unit": "sglang-c.service", "unit_path": str(tmp_path / "sglang-c.service"),
                 "env_file": str(tmp_path / "c.env")},
                {"unit": "sglang-same.service", "unit_path": str(tmp_path / "x"), "env_file": str(tmp_path / "y")}]
    planned, failed = run({"files": files, "services": services, "secret_values": ["secret-1", "secret-2"]},
                          check_mode=True)
    assert failed is False, planned
    assert planned["restarts"] == [
        {"unit": "sglang-a.service", "planned": True,
         "reasons": ["fingerprint sglang 0.5.23 -> 0.5.24", "fingerprint venv /v1 -> /v2"]},
        {"unit": "sglang-b.service", "planned": True, "reasons": ["env K"]},
        {"unit": "sglang-c.service", "planned": True, "reasons": ["new unit"]},
    ]
    done, failed = run({"files": files, "services": services})
    assert [(r["unit"], r["planned"]) for r in done["restarts"]] == [
        ("sglang-a.service", False), ("sglang-b.service", False), ("sglang-c.service", False)]
    again, failed = run({"files": files, "services": services})
    assert again["restarts"] == [] and again["changed"] is False


def test_a_changed_credential_restarts_its_service_named_not_shown(run, tmp_path):
    """The router's key files: a rotation restarts the router with the file's name as the reason, never the key."""
    unit = write(tmp_path / "sglang-router.service", "[Service]\nExecStart=/bin/true\n")
    env = write(tmp_path / "router.env", MARKER + "\nHF_HUB_OFFLINE=\"1\"\n", 0o640)
    key = write(tmp_path / "router-api-key", "old-s3cret", 0o600)
    other = write(tmp_path / "router-control-plane-api-key", "adm1n", 0o600)
    files = [entry(unit, "[Service]\nExecStart=/bin/true\n"), entry(env, MARKER + "\nHF_HUB_OFFLINE=\"1\"\n", "0640"),
             entry(key, "new-s3cret", "0600"), entry(other, "adm1n", "0600")]
    services = [{"unit": "sglang-router.service", "unit_path": unit, "env_file": env, "credential_files": [key, other]}]
    result, failed = run({"files": files, "services": services, "secret_values": ["new-s3cret", "adm1n"]}, diff=True)
    assert failed is False
    assert result["changed_paths"] == [key]
    assert result["restarts"] == [{"unit": "sglang-router.service", "planned": False,
                                   "reasons": ["credential router-api-key"]}]
    assert "s3cret" not in repr(result), "neither the new key nor the old one (no longer a secret value)"
    assert result["diff"] == [{"before_header": key, "after_header": key, "before": managed_files.HIDDEN,
                               "after": managed_files.HIDDEN}]
    assert (tmp_path / "router-api-key").read_text() == "new-s3cret" and mode_of(tmp_path / "router-api-key") == 0o600
    result, _failed = run({"files": files, "services": services, "secret_values": ["new-s3cret", "adm1n"]})
    assert result["changed"] is False and result["restarts"] == []


def directory(path, mode="0755"):
    return {"path": str(path), "owner": USER, "group": GROUP, "mode": mode}


def test_creates_a_directory_before_its_files_and_then_leaves_it(run, tmp_path):
    wanted = tmp_path / "creds"
    args = {"directories": [directory(wanted, "0700")], "files": [entry(wanted / "key", "k\n", "0600")]}
    planned, failed = run(args, check_mode=True, diff=True)
    assert failed is False, planned
    assert planned["changed"] is True and planned["changed_directories"] == [str(wanted)]
    assert planned["changed_paths"] == [str(wanted / "key")]
    assert not wanted.exists()
    assert planned["diff"][0]["after"] == "directory %s:%s 0700\n" % (USER, GROUP)
    result, failed = run(args)
    assert failed is False, result
    assert result["changed_directories"] == [str(wanted)] and mode_of(wanted) == 0o700
    assert (wanted / "key").read_text() == "k\n"
    again, failed = run(args)
    assert failed is False and again["changed"] is False and again["changed_directories"] == []


def test_gives_an_existing_directory_its_mode(run, tmp_path):
    wanted = tmp_path / "d"
    wanted.mkdir(mode=0o777)
    wanted.chmod(0o777)
    result, failed = run({"directories": [directory(wanted, "0755")], "files": []})
    assert failed is False and result["changed"] is True and result["changed_directories"] == [str(wanted)]
    assert mode_of(wanted) == 0o755


def test_refuses_a_directory_path_that_is_a_file(run, tmp_path):
    path = write(tmp_path / "f", "x\n")
    result, failed = run({"directories": [directory(path)], "files": []})
    assert failed is True and "is not a directory" in result["msg"]


def test_units_to_start_are_read_and_never_started(run, monkeypatch):
    calls = []

    def fake_run_command(self, cmd, **kwargs):
        calls.append(cmd)
        return 0, ("Id=a.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\n"
                   "Id=b.service\nLoadState=loaded\nActiveState=inactive\nUnitFileState=enabled\n\n"
                   "Id=c.service\nLoadState=loaded\nActiveState=active\nUnitFileState=disabled\n"), ""
    monkeypatch.setattr(managed_files.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/bin/systemctl")
    monkeypatch.setattr(managed_files.AnsibleModule, "run_command", fake_run_command)
    result, failed = run({"files": [], "units": ["a.service", "b.service", "c.service", "d.service"]}, check_mode=True)
    assert failed is False, result
    assert result["units_to_start"] == ["b.service", "c.service", "d.service"]
    assert result["changed"] is False
    assert [c[1] for c in calls] == ["show"]


def test_a_rotated_tls_key_restarts_the_router_named_and_never_shown(run, tmp_path):
    """The router's TLS key is a credential file too (sglang_router_tls): many lines of PEM, never in the diff."""
    old_key = "-----BEGIN PRIVATE KEY-----\nMIGHold-s3cret\n-----END PRIVATE KEY-----\n"
    new_key = "-----BEGIN PRIVATE KEY-----\nMIGHnew-s3cret\n-----END PRIVATE KEY-----\n"
    unit = write(tmp_path / "sglang-router.service", "[Service]\nExecStart=/bin/true\n")
    key = write(tmp_path / "router-tls-key", old_key, 0o600)
    files = [entry(unit, "[Service]\nExecStart=/bin/true\n"), entry(key, new_key, "0600")]
    services = [{"unit": "sglang-router.service", "unit_path": unit, "credential_files": [key]}]
    for check_mode in (True, False):
        result, failed = run({"files": files, "services": services, "secret_values": [new_key]}, check_mode=check_mode,
                             diff=True)
        assert failed is False and result["changed_paths"] == [key]
        assert result["restarts"][0]["reasons"] == ["credential router-tls-key"]
        assert "s3cret" not in repr(result) and "MIGH" not in repr(result)
        assert result["diff"] == [{"before_header": key, "after_header": key, "before": managed_files.HIDDEN,
                                   "after": managed_files.HIDDEN}]
    assert (tmp_path / "router-tls-key").read_text() == new_key and mode_of(tmp_path / "router-tls-key") == 0o600


def _my_account(config, **changes):
    me = pwd.getpwuid(os.getuid())
    account = {"name": me.pw_name, "group": grp.getgrgid(me.pw_gid).gr_name, "home": me.pw_dir, "shell": me.pw_shell,
               "config_dir": str(config), "extra_groups": []}
    account.update(changes)
    return account


@pytest.mark.parametrize("change, to_fix", [
    ({}, False),
    ({"shell": "/pdserve/other/shell"}, True),
    ({"name": "pdserve-no-such-user", "group": "pdserve-no-such-group"}, True),
    ({"config_mode": "0755"}, True),
])
def test_the_plan_says_whether_the_service_account_differs_and_changes_nothing_of_it(run, tmp_path, change, to_fix):
    config = tmp_path / "etc"
    config.mkdir()
    os.chown(str(config), 0, os.getgid())
    config.chmod(0o750)
    unit = tmp_path / "a.service"
    result, failed = run({"files": [entry(unit, "x\n")], "account": _my_account(config, **change)}, check_mode=True)
    assert not failed, result
    assert result["account_to_fix"] is to_fix
    assert stat.S_IMODE(config.stat().st_mode) == 0o750 and not unit.exists()


def test_without_an_account_there_is_nothing_to_fix(run, tmp_path):
    result, failed = run({"files": [entry(tmp_path / "a.service", "x\n")]}, check_mode=True)
    assert not failed, result
    assert result["account_to_fix"] is None


SHOW = ("Id=running.service\nLoadState=loaded\nActiveState=active\nUnitFileState=disabled\n\n"
        "Id=new.service\nLoadState=loaded\nActiveState=inactive\nUnitFileState=disabled\n")


def _systemctl(monkeypatch, rc=0):
    calls = []

    def fake_run_command(self, cmd, **kwargs):
        calls.append(cmd[1:])
        if cmd[1] == "show":
            return 0, SHOW, ""
        return rc, "", "Job for new.service failed" if rc else ""
    monkeypatch.setattr(managed_files.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/bin/systemctl")
    monkeypatch.setattr(managed_files.AnsibleModule, "run_command", fake_run_command)
    return calls


def _services(tmp_path):
    return [{"unit": name, "unit_path": str(tmp_path / name)} for name in ("running.service", "new.service")]


def test_the_write_reloads_systemd_and_starts_what_was_not_running_in_one_round_trip(run, tmp_path, monkeypatch):
    calls = _systemctl(monkeypatch)
    files = [entry(tmp_path / "running.service", "[Service]\nExecStart=/bin/b\n"), entry(tmp_path / "new.service", "n\n")]
    result, failed = run({"files": files, "services": _services(tmp_path), "daemon_reload": True,
                          "start": ["running.service", "new.service"]})
    assert not failed, result
    assert calls == [["show", "--property=Id,LoadState,ActiveState,UnitFileState", "--", "running.service", "new.service"],
                     ["daemon-reload"], ["enable", "--now", "--", "running.service", "new.service"]]
    assert result["daemon_reloaded"] is True and result["started"] == ["new.service"]
    # The running unit was only enabled: its new files need the caller's restart; the new one runs them already.
    assert [r["unit"] for r in result["restarts"]] == ["running.service", "new.service"]
    assert [r["unit"] for r in result["restarts_left"]] == ["running.service"]


def test_nothing_changed_means_no_reload_and_check_mode_starts_nothing(run, tmp_path, monkeypatch):
    calls = _systemctl(monkeypatch)
    path = write(tmp_path / "running.service", "same\n")
    same = [entry(path, "same\n")]
    result, failed = run({"files": same, "daemon_reload": True})
    assert not failed and result["daemon_reloaded"] is False and result["changed"] is False and calls == []
    changed = [entry(path, "other\n")]
    result, failed = run({"files": changed, "daemon_reload": True, "start": ["new.service"]}, check_mode=True)
    assert not failed and result["daemon_reloaded"] is False and result["started"] == [] and calls == []
    assert (tmp_path / "running.service").read_text() == "same\n"


def test_a_unit_that_does_not_start_fails_the_write_naming_it(run, tmp_path, monkeypatch):
    _systemctl(monkeypatch, rc=1)
    result, failed = run({"files": [entry(tmp_path / "new.service", "n\n")], "daemon_reload": True,
                          "start": ["new.service"]})
    assert failed and "daemon-reload failed" in result["msg"] and "new.service" in result["msg"]
