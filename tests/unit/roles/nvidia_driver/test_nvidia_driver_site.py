# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml's driver play: `--tags driver` lists the nvidia_driver role's tasks for gpu_hosts and nothing
else, with the reboot throttled to one host at a time (not serial on the play)."""

import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "nvidia_driver")


def _list_tasks(inventory):
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".cache", "collections"))
    env["ANSIBLE_NOCOLOR"] = "1"
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "site.yml", "-i",
                           "inventories/" + inventory, "--tags", "driver", "--list-tasks"],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def test_driver_tag_lists_the_role_for_gpu_hosts_only():
    out = _list_tasks("blackwell")
    plays = re.findall(r"play #\d+ \(([^)]*)\): ([^\t]*)\t", out)
    tasks = [line.strip().split("\t")[0] for line in out.splitlines() if "TAGS: [" in line and " : " in line]
    driver = [t for t in tasks if t.startswith("pdserve.sglang.nvidia_driver : ")]
    assert ("gpu_hosts", "NVIDIA driver and CUDA") in plays
    assert "pdserve.sglang.nvidia_driver : Refuse, with every reason at once, a host that cannot take this driver" in driver
    assert "pdserve.sglang.nvidia_driver : Verify the driver, GPU by GPU" in driver
    assert not [t for t in tasks if " : " in t and not t.startswith(("pdserve.sglang.nvidia_driver", "pdserve.sglang.sglang_"))]


def test_reboot_is_throttled_and_the_play_is_not_serial():
    with open(os.path.join(ROLE, "tasks", "reboot.yml")) as handle:
        reboot = [t for t in yaml.safe_load(handle) if "ansible.builtin.reboot" in t][0]
    assert reboot["throttle"] == 1
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as handle:
        play = [p for p in yaml.safe_load(handle) if p.get("tags") == ["driver"]][0]
    assert play["hosts"] == "gpu_hosts" and "serial" not in play and play["become"] is True


def test_inventories_set_the_shared_expectations():
    for inventory in ("blackwell", "multinode"):
        with open(os.path.join(ROOT, "inventories", inventory, "group_vars", "gpu_hosts.yml")) as handle:
            values = yaml.safe_load(handle)
        assert values == {"pdserve_expected_gpu_count": 8, "pdserve_expected_compute_capability": "12.0",
                          "pdserve_expected_numa_nodes": 2}
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    assert defaults["nvidia_driver_expected_gpu_count"] == "{{ pdserve_expected_gpu_count | default(none) }}"
