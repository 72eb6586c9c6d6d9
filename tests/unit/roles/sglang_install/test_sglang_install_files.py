# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The helpers sglang_install ships in files/ (build-skip inputs, job runner, preflight probe) and
the agreement of defaults/main.yml with meta/argument_specs.yml. The role's build-skip logic end
to end (build once, skip on rerun, rebuild on an input change) runs in the molecule scenario
extensions/molecule/sglang_install."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import yaml

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_install"))
FILES = os.path.join(ROLE, "files")


def tree_hash(path):
    return subprocess.check_output([sys.executable, os.path.join(FILES, "sglang_install_tree_hash.py"), str(path)],
                                   text=True).strip()


def make_tree(root):
    (root / "pkg").mkdir(parents=True)
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (root / "pkg" / "kernel.cu").write_text("__global__ void k() {}\n")
    return root


def test_tree_hash_ignores_build_outputs_and_vcs(tmp_path):
    src = make_tree(tmp_path / "src")
    before = tree_hash(src)
    assert len(before) == 64
    for junk in ("build/lib/x.so", "dist/x.whl", "x.egg-info/PKG-INFO", ".git/HEAD", "pkg/__pycache__/a.pyc"):
        path = src / junk
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("output")
    assert tree_hash(src) == before


def test_tree_hash_follows_content_names_and_modes(tmp_path):
    src = make_tree(tmp_path / "src")
    base = tree_hash(src)
    (src / "pkg" / "kernel.cu").write_text("__global__ void k() { /* changed */ }\n")
    changed = tree_hash(src)
    assert changed != base
    os.chmod(src / "setup.py", 0o755)
    assert tree_hash(src) != changed
    os.chmod(src / "setup.py", 0o644)
    assert tree_hash(src) == changed
    (src / "pkg" / "kernel.cu").rename(src / "pkg" / "other.cu")
    assert tree_hash(src) != changed


def test_runner_copies_source_runs_in_copy_and_records_status(tmp_path):
    src = make_tree(tmp_path / "src")
    work = tmp_path / "work"
    log = tmp_path / "build.log"
    runner = os.path.join(FILES, "sglang_install_run.sh")
    rc = subprocess.call(["bash", runner, str(work), str(log), str(src),
                          'echo "arch=$TORCH_CUDA_ARCH_LIST"; touch built-here; exit 3'],
                         env=dict(os.environ, TORCH_CUDA_ARCH_LIST="12.0"))
    assert rc == 3
    assert (tmp_path / "build.log.rc").read_text().strip() == "3"
    text = log.read_text()
    assert "arch=12.0" in text
    assert "pdserve build: exit 3" in text
    assert (work / "built-here").exists()
    assert not (src / "built-here").exists()
    assert (work / "pkg" / "kernel.cu").exists()


def test_runner_success_and_missing_workdir(tmp_path):
    runner = os.path.join(FILES, "sglang_install_run.sh")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    assert subprocess.call(["bash", runner, str(checkout), str(tmp_path / "ok.log"), "", "true"]) == 0
    assert (tmp_path / "ok.log.rc").read_text().strip() == "0"
    assert subprocess.call(["bash", runner, str(tmp_path / "absent"), str(tmp_path / "no.log"), "", "true"]) == 127
    assert (tmp_path / "no.log.rc").read_text().strip() == "127"


def test_probe_reports_disk_per_filesystem(tmp_path):
    existing = tmp_path / "venv"
    existing.mkdir()
    out = subprocess.check_output([sys.executable, os.path.join(FILES, "sglang_install_probe.py"), str(tmp_path / "no-cuda"),
                                   "venv:1:%s" % existing, "build:2:%s" % (tmp_path / "new" / "build"),
                                   "model:100000000:%s" % (tmp_path / "models" / "m")], text=True)
    facts = json.loads(out)
    assert facts["python"]["version"] == "%d.%d" % sys.version_info[:2]
    assert facts["libc"]["name"] in ("glibc", "")
    disk = {d["name"]: d for d in facts["disk"]}
    assert disk["venv"]["need_gb"] == 0  # already there: a rerun needs nothing
    assert disk["build"]["need_gb"] == 2
    assert disk["build"]["checked"] == str(tmp_path)
    assert disk["model"]["need_gb_total"] == 100000002  # same filesystem: the needs add up
    assert disk["model"]["ok"] is False and disk["build"]["ok"] is False
    assert facts["cuda"]["nvcc"] == "" or os.path.basename(facts["cuda"]["nvcc"]) == "nvcc"


def test_defaults_and_argument_specs_agree():
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    options = specs["main"]["options"]
    assert sorted(options) == sorted(defaults)
    for name, value in defaults.items():
        assert options[name].get("default") == value, name
        assert options[name].get("description"), name
        if "choices" in options[name]:
            assert value in options[name]["choices"], name
    for name, option in specs["flag_check"]["options"].items():
        assert option == options[name], name
