# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""install_facts run through main(): the host read in one call, with stand-in tools on a controlled PATH."""

import stat
import sys

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.install import host as install_host
from ansible_collections.pdserve.sglang.plugins.modules import install_facts


def tool(directory, name, body):
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A PATH with only the tools a test puts there, and no system libucp."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(install_host.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(install_host, "LIBUCP_GLOBS", ())
    # get_bin_path also looks in the sbin directories; none of the tools below live there on a build machine.
    return bin_dir


@pytest.fixture
def run(module_runner):
    return lambda args, check_mode=False: module_runner(install_facts.main, args, check_mode=check_mode)


def test_a_bare_host(host, run, tmp_path):
    (tmp_path / "venv").mkdir()
    result, failed = run({
        "python": sys.executable,
        "cuda_home": str(tmp_path / "cuda"),
        "disk": [{"name": "venv", "path": str(tmp_path / "venv"), "min_free_gb": 25}],
        "paths": [str(tmp_path / "venv"), str(tmp_path / "absent")],
        "users": ["root"],
    })
    assert not failed and result["changed"] is False
    assert result["python"]["found"] is True and result["python"]["version"] == "%d.%d" % sys.version_info[:2]
    assert result["ucx"] == {"present": False, "ucx_info": "", "libucp": "", "version": ""}
    assert result["cuda"] == {"home": str(tmp_path / "cuda"), "nvcc": "", "version": ""}
    assert result["disk"][0]["exists"] is True and result["disk"][0]["need_gb"] == 0 and result["disk"][0]["ok"] is True
    assert result["paths"][str(tmp_path / "venv")]["isdir"] is True
    assert result["paths"][str(tmp_path / "absent")]["exists"] is False
    assert result["users"]["root"]["exists"] is True
    assert result["ansible_facts"]["pdserve_install"]["cuda"] == result["cuda"]


def test_ucx_toolkit_git_and_compiler_found(host, run, tmp_path):
    ucx_info = tool(host, "ucx_info", 'echo "# Library version: 1.16.0"')
    nvcc = tool(host, "nvcc", 'echo "Cuda compilation tools, release 12.8, V12.8.93"')
    git = tool(host, "git", "true")
    gcc = tool(host, "gcc", "true")
    result, failed = run({"python": sys.executable, "cuda_home": str(tmp_path / "no-cuda")}, check_mode=True)
    assert not failed
    assert result["ucx"] == {"present": True, "ucx_info": ucx_info, "libucp": "", "version": "1.16.0"}
    assert result["cuda"]["nvcc"] == nvcc and result["cuda"]["version"] == "12.8"
    assert result["git"] == git and result["cc"] == gcc


def test_an_interpreter_that_does_not_answer_is_a_fact_not_a_failure(host, run, tmp_path):
    result, failed = run({"python": str(tmp_path / "python3.12")})
    assert not failed
    assert result["python"]["found"] is False and "does not exist" in result["python"]["error"]


def test_disk_entries_are_typed(host, run, tmp_path):
    result, failed = run({"disk": [{"name": "venv", "path": str(tmp_path / "v")}]})
    assert failed and "min_free_gb" in result["msg"]
    result, failed = run({"disk": [{"name": "venv", "path": str(tmp_path / "v"), "min_free_gb": "lots"}]})
    assert failed and "min_free_gb" in result["msg"]
    result, failed = run({"disk": [{"name": "venv", "path": "v", "min_free_gb": 1}]})
    assert not failed and "not an absolute path" in result["disk"][0]["error"]


def test_a_venv_directory_without_its_python_or_with_the_incomplete_marker_needs_its_space(host, run, tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    entry = {"name": "venv", "path": str(venv), "min_free_gb": 1, "present": str(venv / "bin" / "python"),
             "incomplete": str(venv / "pdserve-install-incomplete")}
    result, failed = run({"disk": [entry]})
    assert not failed
    measured = result["disk"][0]
    assert measured["exists"] is False and measured["need_gb"] == 1 and measured["checked"] == str(venv)
    # The filesystem is named from this machine's mount table, its size and free space in bytes.
    assert measured["filesystem"]["mount"].startswith("/") and measured["filesystem"]["fstype"]
    assert measured["size_bytes"] > 0 and 0 <= measured["free_bytes"] <= measured["size_bytes"]
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text("")
    assert run({"disk": [entry]})[0]["disk"][0]["need_gb"] == 0
    (venv / "pdserve-install-incomplete").write_text("")
    assert run({"disk": [entry]})[0]["disk"][0]["need_gb"] == 1


@pytest.mark.parametrize("name, to_fix", [(None, None), ("pdserve-no-such-user", True)])
def test_the_service_account_is_read_with_the_host(host, run, tmp_path, name, to_fix):
    args = {"python": sys.executable}
    if name:
        args["account"] = {"name": name, "group": name, "home": str(tmp_path / "home")}
    result, failed = run(args)
    assert not failed, result
    assert result["account_to_fix"] is to_fix
    assert "account_to_fix" not in result["ansible_facts"]["pdserve_install"]
    assert not (tmp_path / "home").exists()
