# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The three layers of a server's environment, through the role as a play renders them (the snapshot's
render_units.yml on an inventory written here): the instance's own env over the model env over the transfer
env over SGLang's PD timeout of the instance's side (sglang_server_disaggregation_*_timeout) and, on a decode, its
heartbeat (sglang_server_disaggregation_heartbeat_*), each instance's own env in its own env file and in no other."""

import os
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[4]
RENDER = ROOT / "tests" / "unit" / "snapshot" / "render_units.yml"

# LAYER is set by every layer, the other names by one or two: what wins shows in each file.
INVENTORY = {
    "sglang_venv": "/opt/sglang/venv",
    # A router on loopback needs no key (one reachable from other hosts is refused without one).
    "sglang_router_host": "127.0.0.1",
    "sglang_model_path": "/models/m",
    "sglang_model_served_name": "m",
    "sglang_model_transfer_backend": "nixl",
    "sglang_model_transfer_env": {"LAYER": "transfer", "TRANSFER_ONLY": "t", "TRANSFER_AND_MODEL": "transfer"},
    "sglang_model_env": {"LAYER": "model", "MODEL_ONLY": "m", "TRANSFER_AND_MODEL": "model"},
    "sglang_prefill_instances": [
        {"name": "prefill-0", "port": 30000, "bootstrap_port": 8998, "dist_init_port": 30335,
         "env": {"LAYER": "prefill-0", "ONLY_PREFILL_0": "p0", "MODEL_ONLY": "p0"}},
        {"name": "prefill-1", "port": 30010, "bootstrap_port": 8999, "dist_init_port": 30345,
         "env": {"LAYER": "prefill-1", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "90"}},
    ],
    "sglang_decode_instances": [{"name": "decode", "port": 30002, "dist_init_port": 30435,
                                 "env": {"SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "4"}}],
}
EXPECTED = {
    "prefill-0": {"LAYER": "prefill-0", "MODEL_ONLY": "p0", "ONLY_PREFILL_0": "p0", "TRANSFER_AND_MODEL": "model",
                  "TRANSFER_ONLY": "t", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "30"},
    "prefill-1": {"LAYER": "prefill-1", "MODEL_ONLY": "m", "TRANSFER_AND_MODEL": "model", "TRANSFER_ONLY": "t",
                  "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "90"},
    "decode": {"LAYER": "model", "MODEL_ONLY": "m", "TRANSFER_AND_MODEL": "model", "TRANSFER_ONLY": "t",
               "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "30", "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL": "5.0",
               "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "4"},
}


def _env(path):
    """The variables of an env file, the fingerprint (PDSERVE_*) left out."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            if not key.startswith("PDSERVE_"):
                out[key] = value.strip('"')
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    base = tmp_path_factory.mktemp("env-layers")
    inventory = base / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    groups = dict((group, {"hosts": {"box": None}}) for group in ("sglang_prefill", "sglang_decode", "sglang_router"))
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": groups}}))
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(INVENTORY))
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    env["ANSIBLE_NOCOLOR"] = "1"
    out = base / "out"
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(RENDER),
                           "-i", str(inventory / "hosts.yml"), "-e", "snapshot_dir=%s" % out],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    return out / "box" / "etc" / "sglang"


def test_each_instance_has_its_env_file(rendered):
    # The router's env file lives in its own directory (/etc/sglang-router), not beside the servers'.
    assert sorted(p.name for p in rendered.glob("*.env")) == ["decode.env", "prefill-0.env", "prefill-1.env"]


# Set by the collection for every instance, over every layer (serving/caches.py): not part of the layering.
CACHES = ("SGLANG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR", "SGLANG_DG_CACHE_DIR")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_instance_env_over_model_env_over_transfer_env(rendered, name):
    env = _env(rendered / ("%s.env" % name))
    assert dict((k, v) for k, v in env.items() if k not in CACHES) == EXPECTED[name]


def test_each_instance_compiles_into_caches_of_its_own(rendered):
    caches = dict((name, dict((k, _env(rendered / ("%s.env" % name))[k]) for k in CACHES)) for name in EXPECTED)
    for name, env in caches.items():
        assert env["SGLANG_CACHE_DIR"].endswith("/" + name)
        assert env["SGLANG_JIT_CACHE_DIR"] == env["SGLANG_CACHE_DIR"] + "/jit"
        assert env["SGLANG_DG_CACHE_DIR"] == env["SGLANG_CACHE_DIR"] + "/deep_gemm"
    assert len(set(env["SGLANG_CACHE_DIR"] for env in caches.values())) == len(EXPECTED)
