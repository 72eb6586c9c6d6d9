# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""monitoring_facts: one read of packages, units, directories, apt lines and paths; never a change."""

import grp
import os
import pwd

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import monitoring_facts

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name
STATUS = "Package: prometheus\nStatus: install ok installed\nVersion: 2.42.0+ds-5+b5\n"
SHOW = "Id=prometheus.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n"


@pytest.fixture
def run(module_runner, monkeypatch, tmp_path):
    status = tmp_path / "status"
    status.write_text(STATUS)
    monkeypatch.setattr(monitoring_facts, "DPKG_STATUS", str(status))
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return 0, SHOW, ""
    monkeypatch.setattr(monitoring_facts.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(monitoring_facts.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/bin/" + name)

    def go(args, check_mode=False):
        result, failed = module_runner(monitoring_facts.main, args, check_mode)
        result["calls"] = calls
        return result, failed
    return go


def test_an_unchanged_host_has_nothing_to_do(run, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir(mode=0o750)
    rules.chmod(0o750)
    source = tmp_path / "pdserve.list"
    source.write_text("deb [trusted=yes] file:/srv ./\n")
    result, failed = run({"packages": ["prometheus"], "units": ["prometheus.service"],
                          "directories": [{"path": str(rules), "owner": USER, "group": GROUP, "mode": "0750"}],
                          "lines": [{"path": str(source), "line": "deb [trusted=yes] file:/srv ./"}],
                          "paths": [str(source)]}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["packages"] == {"prometheus": "2.42.0+ds-5+b5"}
    for key in ("missing_packages", "missing_names", "units_to_start", "directories_to_fix", "lines_missing",
                "paths_missing"):
        assert result[key] == [], key
    assert result["calls"] == [["/bin/systemctl", "show", "--property=Id,LoadState,ActiveState,UnitFileState", "--",
                                "prometheus.service"]]


def test_a_fresh_host_says_what_is_missing(run, tmp_path):
    result, failed = run({"packages": ["prometheus=2.45.*", "prometheus-alertmanager"],
                          "units": ["prometheus.service", "prometheus-alertmanager.service"],
                          "directories": [{"path": str(tmp_path / "nope")}, {"path": str(tmp_path), "mode": "0711"}],
                          "lines": [{"path": str(tmp_path / "none.list"), "line": "deb x"}],
                          "paths": [str(tmp_path / "key.asc")]})
    assert not failed
    assert result["missing_packages"] == ["prometheus=2.45.*", "prometheus-alertmanager"]
    assert result["missing_names"] == ["prometheus", "prometheus-alertmanager"]
    assert result["units_to_start"] == ["prometheus-alertmanager.service"]
    assert result["directories_to_fix"] == [str(tmp_path / "nope"), str(tmp_path)]
    assert result["lines_missing"] == [str(tmp_path / "none.list")]
    assert result["paths_missing"] == [str(tmp_path / "key.asc")]


def test_nothing_asked_reads_nothing(run):
    result, failed = run({})
    assert not failed and result["calls"] == [] and result["packages"] == {}


def test_files_to_write_are_those_managed_files_would_write(run, tmp_path):
    same = tmp_path / "same.yml"
    same.write_text("a: 1\n")
    same.chmod(0o640)
    other = tmp_path / "other.yml"
    other.write_text("old\n")
    other.chmod(0o644)
    mode = tmp_path / "mode.yml"
    mode.write_text("m\n")
    mode.chmod(0o600)

    def entry(path, content, file_mode, owner=USER):
        return {"path": str(path), "content": content, "owner": owner, "group": GROUP, "mode": file_mode}
    files = [entry(same, "a: 1\n", "0640"), entry(other, "new\n", "0644"), entry(mode, "m\n", "0644"),
             entry(tmp_path / "absent.yml", "x\n", "0644"), entry(tmp_path / "no-dir" / "f.yml", "x\n", "0644"),
             entry(same, "a: 1\n", "0640", owner="pdserve-no-such-user")]
    result, failed = run({"files": files, "secret_values": ["s3cret"]}, check_mode=True)
    assert failed is False, result
    assert result["changed"] is False
    assert result["files_to_write"] == [str(other), str(mode), str(tmp_path / "absent.yml"),
                                        str(tmp_path / "no-dir" / "f.yml"), str(same)]
    assert other.read_text() == "old\n"
