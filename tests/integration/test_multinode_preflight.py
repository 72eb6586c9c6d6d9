# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml --tags preflight on a temporary copy of inventories/multinode_tp with one operator mistake each: the run
fails in its first play, before anything changes, with a line naming the host, the variable and the fix.

Every host runs with the local connection against a recorded 8-GPU host (the checks that need the real host are
skipped): the example's addresses are never contacted.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "gpu"
FIRST_PLAY = "Check the inventory against every serving host before anything changes"


def _inventory(tmp_path, change=None):
    dest = tmp_path / "inventory"
    shutil.copytree(ROOT / "inventories" / "multinode_tp", dest)
    if change:
        change(dest)
    return dest


def _edit(path, edit):
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _preflight(tmp_path, gpu_sysfs, inventory):
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n'
                   % (sys.executable, FIXTURES / "fake_nvidia_smi.py", FIXTURES / "blackwell8x"))
    smi.chmod(0o755)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    argv = [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "site.yml", "-i", str(inventory),
            "--tags", "preflight", "-e", "ansible_connection=local", "-e", "ansible_python_interpreter=%s" % sys.executable,
            "-e", "sglang_server_preflight_sysfs_root=%s" % gpu_sysfs("blackwell8x"),
            "-e", "sglang_server_preflight_nvidia_smi=%s" % smi, "-e", "sglang_server_gpu_facts=always"]
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, check=False)
    return proc.returncode, proc.stdout


def _prefill(edit):
    return lambda dest: _edit(dest / "group_vars" / "sglang_prefill.yml",
                              lambda data: edit(data["sglang_prefill_instances"][0]))


def _decode(edit):
    return lambda dest: _edit(dest / "group_vars" / "sglang_decode.yml",
                              lambda data: edit(data["sglang_decode_instances"][0]))


def test_the_example_passes(tmp_path, gpu_sysfs):
    rc, out = _preflight(tmp_path, gpu_sysfs, _inventory(tmp_path))
    assert rc == 0, out
    for host in ("gpu-p0", "gpu-p1", "gpu-d0", "gpu-d1", "router-1"):
        assert "%s " % host in out.split("PLAY RECAP")[1], out


MISTAKES = {
    # tp x pp not divisible by the node count
    "tp": (_prefill(lambda inst: inst.update(tp_size=15)),
           "host gpu-p0: sglang_prefill_instances[prefill-0].tp_size: tp_size x pp_size = 15 x 1 = 15 is not divisible "
           "by the 2 nodes"),
    # rank 0 on loopback
    "loopback": (lambda dest: (dest / "host_vars" / "gpu-d0.yml").write_text("---\nsglang_server_host: 127.0.0.1\n"),
                 "host gpu-d0: sglang_server_host: rank 0 of decode-0 on gpu-d0 serves on 127.0.0.1, a loopback address"),
    # a node that is not in the server group
    "group": (_prefill(lambda inst: inst.update(nodes=["gpu-p0", "gpu-d1"])),
              "host gpu-p0: sglang_prefill_instances[prefill-0].nodes: names gpu-d1, which is not a host of group "
              "sglang_prefill"),
    # the attention-DP ports of dist-init+1..+13 clash with another port of rank 0's host
    "attn_dp_ports": (_decode(lambda inst: inst.update(port=30440)),
                      "host gpu-d0: sglang_decode_instances[decode-0].dist_init_port (+5, attention DP): port 30440 is "
                      "used by both"),
    # a node name that is no inventory host name (a line break in it)
    "hostile_node": (_prefill(lambda inst: inst.update(nodes=["gpu-p0", "gpu-p1\nX=1"])),
                     "host gpu-p0: sglang_prefill_instances[prefill-0].nodes: holds 'gpu-p1\\nX=1', which is not an "
                     "inventory host name"),
    # --dp-size across nodes, which SGLang refuses
    "dp_size": (_decode(lambda inst: inst.update(attn_dp_size=None, dp_size=2)),
                "host gpu-d0: sglang_decode_instances[decode-0].dp_size: gives --dp-size 2 on an instance over 2 nodes"),
}


def test_dp_size_with_dp_attention_is_a_warning_naming_attn_dp_size(tmp_path, gpu_sysfs):
    change = _decode(lambda inst: inst.update(attn_dp_size=None, extra_args=["--dp-size", "16", "--enable-dp-attention"]))
    rc, out = _preflight(tmp_path, gpu_sysfs, _inventory(tmp_path, change))
    assert rc == 0, out
    assert "deprecated; write attn_dp_size: 16 on the instance (it renders --attn-dp-size 16)" in " ".join(out.split()), out


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_stops_the_first_play(tmp_path, gpu_sysfs, mistake):
    change, expected = MISTAKES[mistake]
    rc, out = _preflight(tmp_path, gpu_sysfs, _inventory(tmp_path, change))
    assert rc != 0, out
    assert expected in " ".join(out.split()), out
    # It stopped in the first play, and the fix is part of the line.
    assert "PLAY [%s]" % FIRST_PLAY in out and "PLAY [Check the install layer" not in out, out
    # The fix follows the message on the same line.
    assert "; " in " ".join(out.split()).split(expected, 1)[1][:400], out
