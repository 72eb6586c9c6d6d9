# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The collection as users get it: built with ansible-galaxy, installed, and run from the install.

Also the preflight's planning mode: an inventory judged against recorded GPU data on this machine
(local connection; nothing contacts the inventory's example addresses).
"""

import os
import pathlib
import re
import subprocess
import sys
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "gpu"
# Documents of the development setup that a user of the built collection does not have.
OUTSIDE_DOCUMENTS = re.compile(r"DESIGN\.md|SGLANG-FACTS\.md|TEST-PLATFORM\.md|\.\./shared|shared/research")


def _run(argv, env, cwd=ROOT, timeout=300):
    proc = subprocess.run([str(a) for a in argv], cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(tarball, collections path with only the installed collection, environment)."""
    work = tmp_path_factory.mktemp("built")
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
               ANSIBLE_LOCALHOST_WARNING="0")
    env.pop("ANSIBLE_CONFIG", None)
    rc, out = _run([BIN / "ansible-galaxy", "collection", "build", "--output-path", work, str(ROOT)], env)
    assert rc == 0, out
    tarball = next(work.glob("pdserve-sglang-*.tar.gz"))
    rc, out = _run([BIN / "ansible-galaxy", "collection", "install", "--offline", "--no-deps",
                    "-p", work / "collections", tarball], env)
    assert rc == 0, out
    return tarball, work / "collections", env


def test_tarball_ships_no_development_plumbing(installed):
    tarball, _path, _env = installed
    with tarfile.open(str(tarball)) as tar:
        names = tar.getnames()
    assert "roles/sglang_server/tasks/main.yml" in names
    assert "plugins/modules/serving_preflight.py" in names
    leaked = [n for n in names if n.startswith(("tests/", "scripts/", "extensions/", "benchmarks/", ".cache/", ".venv/"))
              or n in ("playbooks/local_container.yml",) or n.startswith("inventories/local")]
    assert not leaked, leaked


def test_shipped_files_refer_to_no_document_outside_the_collection(installed):
    tarball, _path, _env = installed
    found = []
    with tarfile.open(str(tarball)) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            found += ["%s: %s" % (member.name, m.group(0)) for m in OUTSIDE_DOCUMENTS.finditer(text)]
    assert not found, found


def test_installed_playbook_lists_every_layer(installed):
    _tarball, _path, env = installed
    rc, out = _run([BIN / "ansible-playbook", "pdserve.sglang.site", "-i", ROOT / "inventories" / "blackwell",
                    "--list-tasks"], env, cwd=ROOT / "inventories")
    assert rc == 0, out
    for role in ("sglang_server", "sglang_router", "sglang_install"):
        assert "pdserve.sglang.%s" % role in out, out
    assert "/%s/" % ROOT.name not in out.replace(str(ROOT / "inventories"), ""), "ran from the checkout, not the install"


def test_installed_modules_document_themselves(installed):
    _tarball, _path, env = installed
    for module in ("serving_preflight", "managed_files", "gpu_facts", "wait_ready", "validate_chat", "sglang_flag_check"):
        rc, out = _run([BIN / "ansible-doc", "pdserve.sglang.%s" % module], env, cwd=ROOT / "inventories")
        assert rc == 0 and "OPTIONS" in out, out


def _fake_smi(tmp_path, capture):
    path = tmp_path / "nvidia-smi"
    path.write_text('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n'
                    % (sys.executable, FIXTURES / "fake_nvidia_smi.py", FIXTURES / capture))
    path.chmod(0o755)
    return path


def _plan(env, inventory, tmp_path, gpu_sysfs, capture="blackwell8x", extra=()):
    """site.yml --tags preflight on this machine (local connection) against a recorded GPU host."""
    argv = [BIN / "ansible-playbook", "pdserve.sglang.site", "-i", ROOT / "inventories" / inventory,
            "--tags", "preflight", "-e", "ansible_connection=local", "-e", "ansible_python_interpreter=%s" % sys.executable,
            "-e", "sglang_server_preflight_sysfs_root=%s" % gpu_sysfs(capture),
            "-e", "sglang_server_preflight_nvidia_smi=%s" % _fake_smi(tmp_path, capture),
            "-e", "sglang_server_gpu_facts=always"]
    for item in extra:
        argv += ["-e", item]
    return _run(argv, env, cwd=ROOT / "inventories")


def test_planning_the_reference_layout_against_an_8_gpu_record(installed, tmp_path, gpu_sysfs):
    _tarball, _path, env = installed
    rc, out = _plan(env, "blackwell", tmp_path, gpu_sysfs)
    assert rc == 0, out
    assert re.search(r"blackwell\s+: ok=\d+\s+changed=0\s", out), out
    # Only the judgement ran: no unit was written, no router configured.
    assert "Write the units" not in out and "Judge this host's part of the serving inventory" in out, out


def test_planning_reports_every_mistake_of_a_layout(installed, tmp_path, gpu_sysfs):
    _tarball, _path, env = installed
    layout = ('{"sglang_prefill_instances": [{"name": "prefill", "gpus": [0, 1, 2, 8], "numa_node": 1, "port": 30000}],'
              ' "sglang_decode_instances": [{"name": "decode", "gpus": [4, 4], "numa_node": 1, "port": 30000}]}')
    rc, out = _plan(env, "blackwell", tmp_path, gpu_sysfs, extra=[layout])
    assert rc != 0, out
    for expected in (
            "sglang_prefill_instances[prefill].gpus: uses GPU 8 but the host has GPU index(es) [0, 1, 2, 3, 4, 5, 6, 7]",
            "sglang_prefill_instances[prefill].numa_node: is 1 but GPU 0 is attached to NUMA node 0",
            "sglang_decode_instances[decode].gpus: lists a GPU twice: [4, 4]",
            "port 30000 is used by both sglang_prefill_instances[prefill].port and sglang_decode_instances[decode].port"):
        assert expected in out, (expected, out)


def test_planning_a_multi_host_layout_catches_loopback_across_hosts(installed, tmp_path, gpu_sysfs):
    _tarball, _path, env = installed
    rc, out = _plan(env, "multinode", tmp_path, gpu_sysfs, extra=["sglang_server_host=127.0.0.1"])
    assert rc != 0, out
    assert "the router on router-1 cannot reach http://127.0.0.1:30000" in out, out
    assert "decode servers on gpu-decode-1 get 127.0.0.1:8998 as the KV bootstrap address" in out, out
