# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml's driver play: `--tags driver` includes the nvidia_driver role for gpu_hosts and nothing
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


def _role_task_names():
    names = []
    for name in sorted(os.listdir(os.path.join(ROLE, "tasks"))):
        with open(os.path.join(ROLE, "tasks", name)) as handle:
            for task in yaml.safe_load(handle) or []:
                names += [task.get("name")] + [t.get("name") for t in task.get("block", [])]
    return names


def test_driver_tag_includes_the_role_for_gpu_hosts_only():
    out = _list_tasks("blackwell")
    plays = re.findall(r"play #\d+ \(([^)]*)\): ([^\t]*)\t", out)
    tasks = [line.strip().split("\t")[0] for line in out.splitlines() if "TAGS: [" in line]
    assert ("gpu_hosts", "NVIDIA driver and CUDA") in plays
    # An include (a disabled layer is one skipped task), so --list-tasks shows the include, not the role's tasks.
    assert "Install and verify the driver with pdserve.sglang.nvidia_driver" in tasks, tasks
    role_tasks = _role_task_names()
    assert "Refuse, with every reason at once, a host that cannot take this driver" in role_tasks
    assert "Verify the driver, GPU by GPU" in role_tasks
    assert not [t for t in tasks if " : " in t and not t.startswith(("pdserve.sglang.nvidia_driver", "pdserve.sglang.sglang_"))]
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as handle:
        play = [p for p in yaml.safe_load(handle) if p.get("tags") == ["driver"]][0]
    include = [t for t in play["tasks"] if "ansible.builtin.include_role" in t]
    assert [t["ansible.builtin.include_role"]["name"] for t in include] == ["pdserve.sglang.nvidia_driver"]
    assert include[0]["when"] == "nvidia_driver_enabled | bool"


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
