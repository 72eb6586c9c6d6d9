# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""monitoring_config_check: each text checked by its tool in a temporary file beside its destination, removed
again; every refusal reported at once. The real promtool and amtool run in tests/unit/monitoring."""

import os
import stat

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import monitoring_config_check

# A stand-in tool: accepts a file whose first line is "ok", else prints an error naming the file.
TOOL = """#!/bin/sh
f="$3"
if [ "$(head -n 1 "$f")" = ok ]; then echo "SUCCESS: $f is fine"; exit 0; fi
echo "FAILED: parsing YAML file $f: bad line" >&2
exit 1
"""


@pytest.fixture
def run(module_runner, monkeypatch, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "promtool"
    tool.write_text(TOOL)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))

    def go(files, check_mode=False):
        return module_runner(monitoring_config_check.main, {"host": "mon-1", "files": files}, check_mode)
    return go


def item(path, content, tool="promtool"):
    return {"path": str(path), "content": content, "argv": [tool, "check", "rules", "%s"]}


def test_accepted_texts_leave_nothing_behind(run, tmp_path):
    result, failed = run([item(tmp_path / "a.yml", "ok\n"), item(tmp_path / "b.yml", "ok\n")])
    assert not failed and result["changed"] is False
    assert result["checked"] == [str(tmp_path / "a.yml"), str(tmp_path / "b.yml")]
    assert sorted(os.listdir(tmp_path)) == ["bin"]


def test_every_refusal_is_reported_with_the_destination_named(run, tmp_path):
    result, failed = run([item(tmp_path / "a.yml", "bad\n"), item(tmp_path / "b.yml", "ok\n"),
                          item(tmp_path / "c.yml", "worse\n")])
    assert failed
    assert result["msg"].startswith("the configuration check found 2 problem(s):\n- host mon-1: %s: promtool check "
                                    "rules refuses it: FAILED: parsing YAML file %s: bad line"
                                    % (tmp_path / "a.yml", tmp_path / "a.yml"))
    assert "nothing was written" in result["msg"] and ".pdserve-check-" not in result["msg"]
    assert result["checked"] == [str(tmp_path / "b.yml")]
    assert sorted(os.listdir(tmp_path)) == ["bin"]


def test_a_missing_tool_fails_a_real_run_and_is_skipped_in_check_mode(run, tmp_path):
    files = [item(tmp_path / "alertmanager.yml", "route: {}\n", tool="amtool-not-here")]
    result, failed = run(files, check_mode=True)
    assert not failed and result["not_checked"] == [str(tmp_path / "alertmanager.yml")]
    result, failed = run(files)
    assert failed and "amtool-not-here is not installed" in result["msg"]
