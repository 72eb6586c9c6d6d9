# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A host of a serving group that declares no instance of its mode (a misspelled instance variable): the server role
refuses it at its first task, before the service user, the units or the prune, even with its preflight off."""

import os
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[4]

PLAY = [{
    "name": "Deploy the decode servers",
    "hosts": "sglang_decode",
    "gather_facts": False,
    "connection": "local",
    "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", "sglang_server_modes": ["decode"],
             "sglang_server_preflight": False, "sglang_model_path": "/models/m", "sglang_model_served_name": "m"},
    "roles": ["pdserve.sglang.sglang_server"],
}]


@pytest.mark.parametrize("host_vars,said", [
    ({"sglang_decode_instanses": [{"name": "decode-0", "port": 30002}]}, "did you mean 'sglang_decode_instanses'?"),
    ({"sglang_decode_instances": []}, "sglang_decode_instances is empty"),
])
def test_the_role_refuses_before_anything_changes(tmp_path, host_vars, said):
    groups = {"sglang_decode": {"hosts": {"box": host_vars}}, "sglang_router": {"hosts": {"box": None}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": groups}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    # Check mode as a second guard: even a role that let it through would change nothing here.
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "play.yml"),
                           "-i", str(tmp_path / "hosts.yml"), "--check"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert proc.returncode != 0, proc.stdout
    tasks = [line for line in proc.stdout.splitlines() if line.startswith("TASK [")]
    assert "Refuse, before anything changes, a host that declares no instance of its mode, decode" in tasks[-1], tasks
    assert not any("service user" in t or "unit and environment files" in t for t in tasks), tasks
    assert "host box: sglang_decode_instances: box is a host of group sglang_decode but declares no decode instance" \
        in proc.stdout
    assert said in proc.stdout and "set sglang_decode_instances for box" in proc.stdout
