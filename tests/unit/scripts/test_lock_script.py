# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The lock generator (scripts/lock.py, run by `bash scripts/lock.sh`): it reads the pins the role installs, asks for
the same requirements the role does, and refuses to write a lock its own parser would refuse."""

import hashlib
import importlib.util
import os
import stat
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("pdserve_lock_script", str(ROOT / "scripts" / "lock.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules(gen):
    return gen.collection()


def test_the_defaults_are_read_as_yaml_reads_them(gen):
    shared = yaml.safe_load((ROOT / "roles/sglang_defaults/defaults/main.yml").read_text())
    install = yaml.safe_load((ROOT / "roles/sglang_install/defaults/main.yml").read_text())
    assert gen.role_defaults() == {
        "source": shared["sglang_install_source"], "version": shared["sglang_install_version"],
        "router_version": shared["sglang_router_version"], "torch_packages": install["sglang_install_torch_packages"],
        "nixl_source": install["sglang_install_nixl_source"], "nixl_package": install["sglang_install_nixl_package"],
        "nixl_version": install["sglang_install_nixl_version"], "extras": install["sglang_install_extras"],
        "extra_packages": install["sglang_install_extra_packages"], "no_deps": install["sglang_install_no_deps"],
        "router_smg_version": shared["sglang_router_smg_version"]}


def test_the_shipped_inputs_are_the_pinned_set(gen, modules):
    plan = modules[0]
    defaults = gen.role_defaults()
    resolved, no_deps = gen.asked(plan, defaults, "servers")
    assert resolved == defaults["torch_packages"] + ["sglang==%s" % defaults["version"],
                                                     "sglang-router==%s" % defaults["router_version"],
                                                     "%s==%s" % (defaults["nixl_package"], defaults["nixl_version"])]
    assert no_deps == []
    # The router's venv holds both router implementations; the servers' venv no smg.
    assert gen.asked(plan, defaults, "router") == (["sglang-router==%s" % defaults["router_version"],
                                                    "smg==%s" % defaults["router_smg_version"]], [])
    for python in gen.SHIPPED_PYTHONS:
        written = (gen.SHIPPED_DIR / ("servers-py%s.in" % python)).read_text().splitlines()[1:]
        assert written == resolved, "roles/sglang_install/files/locks is stale: run bash scripts/lock.sh"


def _variables(gen, name):
    for inventory, path, keys, _profiles in gen.TEST_INVENTORIES:
        if inventory == name:
            variables = yaml.safe_load((ROOT / path).read_text())
            for key in keys:
                variables = variables[key]
            return variables
    raise AssertionError(name)


def test_the_test_inventories_ask_for_what_their_scenarios_install(gen, modules):
    plan = modules[0]
    defaults = gen.role_defaults()
    scenario = _variables(gen, "sglang_install")
    resolved, no_deps = gen.asked(plan, gen.settings_of(scenario, defaults), "servers")
    assert resolved == scenario["sglang_install_torch_packages"] + ["sglang-router==0.3.2", "nixl==1.3.0"] \
        + scenario["sglang_install_extra_packages"]
    assert no_deps == ["sglang==0.5.23"]  # sglang_install_no_deps: true
    local = gen.settings_of(_variables(gen, "local"), defaults)
    assert gen.asked(plan, local, "servers") == (["sglang-router==0.3.2", "prometheus-client==0.26.0", "fastapi==0.165.0",
                                                  "uvicorn==0.54.0"], [])
    assert gen.asked(plan, local, "router") == (["sglang-router==0.3.2", "smg==1.13.0"], [])


def test_every_test_inventory_points_at_its_wheelhouse_locks(gen):
    assert _variables(gen, "local")["sglang_install_pip_lock"].endswith("/wheelhouse-locks/local")
    assert _variables(gen, "sglang_install")["sglang_install_pip_lock"].endswith("/wheelhouse-locks/sglang_install")


def test_a_template_in_an_inventory_is_refused(gen):
    with pytest.raises(SystemExit, match="sglang_install_version to a template"):
        gen.settings_of({"sglang_install_version": "{{ other }}"}, gen.role_defaults())


def _wheel(directory, name, version, payload=b"x = 1\n"):
    path = Path(directory) / ("%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("%s.py" % name, payload)
    return path


def test_a_no_deps_pin_is_the_hash_of_the_wheelhouse_file(gen, tmp_path):
    wheel = _wheel(tmp_path, "sglang", "0.5.23")
    _wheel(tmp_path, "sglang", "0.5.22")
    text = gen.file_pin("sglang==0.5.23", tmp_path)
    assert text.startswith("sglang==0.5.23 \\\n    --hash=sha256:%s\n" % hashlib.sha256(wheel.read_bytes()).hexdigest())
    with pytest.raises(SystemExit, match="no wheel of nixl==1.3.0"):
        gen.file_pin("nixl==1.3.0", tmp_path)


def _fake_uv(tmp_path, output):
    """A stand-in for uv that writes ``output`` to its -o file."""
    script = tmp_path / "uv"
    script.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; out=$1; fi; shift; done\n"
                      "cd %s && cat > \"$out\" <<'EOF'\n%sEOF\n" % (ROOT, output))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_the_generator_writes_only_a_lock_its_parser_accepts(gen, modules, tmp_path, monkeypatch):
    lock = modules[1]
    out = tmp_path / "servers-py3.11.lock"
    monkeypatch.setenv("PDSERVE_UV", str(_fake_uv(tmp_path, "torch==2.14.1 \\\n    --hash=sha256:%s\n" % ("a" * 64))))
    gen.compile_lock(lock, ["torch==2.14.1"], [], out, "3.11", [])
    assert lock.parse(out.read_text())["errors"] == []
    assert (tmp_path / "servers-py3.11.in").read_text().splitlines()[1:] == ["torch==2.14.1"]
    monkeypatch.setenv("PDSERVE_UV", str(_fake_uv(tmp_path, "torch==2.14.1\n")))
    with pytest.raises(SystemExit, match="torch==2.14.1 has no --hash"):
        gen.compile_lock(lock, ["torch==2.14.1"], [], tmp_path / "router-py3.11.lock", "3.11", [])
    assert not (tmp_path / "router-py3.11.lock").exists()
    assert os.path.exists(out)


def test_a_wheelhouse_file_must_be_one_pypi_published(gen, modules):
    lock = modules[1]
    known = gen.published(lock, "3.11")
    shipped = lock.parse((gen.SHIPPED_DIR / "router-py3.11.lock").read_text())["pins"]["sglang-router"]
    good = lock.parse("sglang-router==%s --hash=%s\n" % (shipped["version"], shipped["hashes"][0]))
    assert gen.unpublished(good, known) == []
    forged = lock.parse("sglang-router==%s --hash=sha256:%s\nunknown-thing==1.0 --hash=sha256:%s\n" % (
        shipped["version"], "0" * 64, "1" * 64))
    assert gen.unpublished(forged, known) == ["sglang-router==%s" % shipped["version"]]
