# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""nvidia_driver_facts run through main(): the state of the real H200 capture and of the synthetic reference
host, the refusals for the role's settings and the reboot verdict, in one call."""

import os
import stat
import sys

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import nvidia_driver_facts

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "gpu"))
REFERENCE = {"distribution": "Ubuntu", "distribution_version": "24.04", "source": "nvidia", "branch": "580",
             "version": "", "kernel_module": "open", "secure_boot_policy": "fail", "require_gpu": True,
             "pinning_package": False}


@pytest.fixture
def path_with(tmp_path, monkeypatch):
    """path_with({name: text}) puts commands that print text on an otherwise empty PATH."""
    def make(commands):
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        for name, text in commands.items():
            data = tmp_path / (name + ".out")
            data.write_text(text)
            script = bindir / name
            script.write_text('#!/bin/sh\nexec "%s" -c "import sys; sys.stdout.write(open(sys.argv[1]).read())" "%s"\n'
                              % (sys.executable, data))
            script.chmod(script.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", str(bindir))
    return make


@pytest.fixture
def run(module_runner):
    return lambda args, check_mode=False: module_runner(nvidia_driver_facts.main, args, check_mode=check_mode)


def test_real_h200_state_and_no_refusal(run, path_with, gpu_sysfs):
    with open(os.path.join(FIXTURES, "h200x1_driver", "dpkg-query.txt")) as handle:
        path_with({"dpkg-query": handle.read()})
    result, failed = run({"root": gpu_sysfs("h200x1_driver"), "settings": REFERENCE,
                          "reboot_policy": "if_needed", "connection": "local", "modules": ["nvidia", "nvidia_uvm"]},
                         check_mode=True)
    assert not failed and result["changed"] is False
    state = result["state"]
    assert [g["device"] for g in state["gpus"]] == ["0x2335"]
    assert state["module"]["version"] == "580.159.04" and state["module"]["flavor"] == "open"
    assert state["installed"]["version"] is None
    assert result["problems"] == []
    assert result["reboot"] == {"reboot": False, "required": False, "reasons": [], "message": "no reboot needed"}
    assert result["modules_to_load"] == []
    assert result["ansible_facts"]["pdserve_nvidia_driver"] == state


def test_reference_host_refuses_the_proprietary_flavor(run, path_with, gpu_sysfs):
    path_with({})
    result, failed = run({"root": gpu_sysfs("blackwell8x"), "settings": dict(REFERENCE, kernel_module="proprietary")})
    assert not failed  # the module reports; the role's preflight asserts
    assert [p["variable"] for p in result["problems"]] == ["nvidia_driver_kernel_module"]
    assert "0000:df:00.0 (10de:2bb5, Blackwell)" in result["problems"][0]["message"]
    assert "reboot" not in result


def test_stale_module_needs_a_reboot_and_local_connection_is_never_rebooted(run, path_with, gpu_sysfs):
    path_with({"dpkg-query": "nvidia-kernel-open-dkms\t580.159.05-1\thi \n"})
    root = gpu_sysfs("h200x1_driver")
    result, _failed = run({"root": root, "reboot_policy": "if_needed", "connection": "ssh"})
    assert result["reboot"]["reboot"] is True
    assert result["reboot"]["reasons"] == ["the loaded nvidia module is 580.159.04, the installed driver is 580.159.05"]
    local, _failed = run({"root": root, "reboot_policy": "if_needed", "connection": "local"})
    assert local["reboot"]["reboot"] is False and "local connection" in local["reboot"]["message"]
    never, _failed = run({"root": root, "reboot_policy": "never"})
    assert never["reboot"]["required"] is True and never["reboot"]["reboot"] is False
