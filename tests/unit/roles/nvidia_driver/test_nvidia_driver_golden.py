# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The nvidia_driver role's files and package plans, rendered by Ansible with the role's own defaults,
vars, filter and templates (render.yml, one play per case in cases/), equal the golden files.

The Ubuntu paths (NVIDIA's repository on 24.04 and 22.04/arm64, Canonical's -server-open packages)
cannot be converged here (Ubuntu's archive and NVIDIA's repository are unreachable): this is their
test. Debian 12 is also converged for real by extensions/molecule/nvidia_driver.
After an intended change: PDSERVE_UPDATE_GOLDEN=1 pytest tests/unit/roles/nvidia_driver, then review the diff.
"""

import filecmp
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
GOLDEN = os.path.join(HERE, "golden")
CASES = sorted(name[:-4] for name in os.listdir(os.path.join(HERE, "cases")) if name.endswith(".yml"))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("nvidia_driver_render"))
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".cache", "collections"))
    env.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "render.yml", "-e", "render_dest=" + dest]
    proc = subprocess.run(cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    if os.environ.get("PDSERVE_UPDATE_GOLDEN") == "1":
        shutil.rmtree(GOLDEN, ignore_errors=True)
        shutil.copytree(dest, GOLDEN)
    return dest


def test_every_case_rendered(rendered):
    assert sorted(os.listdir(rendered)) == CASES
    assert sorted(os.listdir(GOLDEN)) == CASES


@pytest.mark.parametrize("case", CASES)
def test_rendered_files_equal_golden(rendered, case):
    comparison = filecmp.dircmp(os.path.join(rendered, case), os.path.join(GOLDEN, case))
    assert not comparison.left_only and not comparison.right_only, (comparison.left_only, comparison.right_only)
    different = [name for name in comparison.common_files
                 if not filecmp.cmp(os.path.join(rendered, case, name), os.path.join(GOLDEN, case, name), shallow=False)]
    assert not different, "%s differs from golden/%s (PDSERVE_UPDATE_GOLDEN=1 to accept)" % (different, case)


def _golden(case, name):
    with open(os.path.join(GOLDEN, case, name)) as handle:
        return handle.read()


def test_reference_host_plan_is_the_compute_only_open_driver():
    plan = json.loads(_golden("ubuntu2404-nvidia-580", "plan.json"))
    assert plan["packages"]["driver"] == ["libnvidia-compute-580", "nvidia-dkms-580-open", "nvidia-utils-580",
                                          "nvidia-compute-utils-580"]
    assert plan["packages"]["prerequisites"][:3] == ["linux-headers-6.8.0-31-generic", "linux-headers-generic", "dkms"]
    assert plan["packages"]["fabricmanager"] == []  # PCIe cards: no NVSwitch, no Fabric Manager
    assert plan["packages"]["toolkit"] == ["cuda-toolkit-13-0"]
    assert plan["repo_url"] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"


def test_sources_are_one_deb822_stanza_with_signed_by():
    text = _golden("ubuntu2404-nvidia-580", "cuda-ubuntu2404-x86_64.sources")
    stanza = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert stanza == [
        "Types: deb",
        "URIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/",
        "Suites: /",
        "Signed-By: /etc/apt/keyrings/pdserve-nvidia-cuda.asc",
    ]


def test_distro_source_pins_nvidia_repository_driver_away():
    text = _golden("ubuntu2404-distro-580", "pdserve-nvidia-driver")
    assert text.index("Pin: origin developer.download.nvidia.com\nPin-Priority: -1") < text.index("Pin: version 580.*")
    plan = json.loads(_golden("ubuntu2404-distro-580", "plan.json"))
    assert "dkms" not in plan["packages"]["all"]
    assert "linux-modules-nvidia-580-server-open-6.8.0-31-generic" in plan["packages"]["driver"]
    assert plan["packages"]["fabricmanager"] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]


def test_branch_change_to_an_exact_version_moves_the_driver():
    plan = json.loads(_golden("ubuntu2204-sbsa-595-full-nvswitch", "plan.json"))
    assert plan["apt_state"] == "latest"
    assert plan["packages"]["pinning"] == ["nvidia-driver-pinning-595"]
    assert "Pin: version 595.71.05-*" in _golden("ubuntu2204-sbsa-595-full-nvswitch", "pdserve-nvidia-driver")
