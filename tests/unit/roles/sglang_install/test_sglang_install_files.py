# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The job runner sglang_install ships in files/ (long jobs and the report on them while they run), and the
agreement of defaults/main.yml with every entry point of meta/argument_specs.yml. The role's
"run when the inputs changed" logic end to end (build once, skip on rerun, rebuild on an input change)
runs in the molecule scenario extensions/molecule/sglang_install."""

import os
import re
import subprocess
import time

import yaml

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_install"))
RUNNER = os.path.join(ROLE, "files", "sglang_install_run.sh")


def make_tree(root):
    (root / "pkg").mkdir(parents=True)
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (root / "pkg" / "kernel.cu").write_text("__global__ void k() {}\n")
    return root


def wait(log, seconds="0", lines="5"):
    return subprocess.check_output(["bash", RUNNER, "--wait", str(log), seconds, lines], universal_newlines=True)


def test_runner_copies_source_runs_in_copy_and_records_status(tmp_path):
    src = make_tree(tmp_path / "src")
    work = tmp_path / "build" / "fa" / "work"
    log = tmp_path / "build" / "fa" / "build.log"  # its directory does not exist yet: the runner makes it
    (tmp_path / "build").mkdir()
    rc = subprocess.call(["bash", RUNNER, str(work), str(log), str(src),
                          'echo "arch=$TORCH_CUDA_ARCH_LIST"; touch built-here; exit 3'],
                         env=dict(os.environ, TORCH_CUDA_ARCH_LIST="12.0"))
    assert rc == 3
    assert (tmp_path / "build" / "fa" / "build.log.rc").read_text().strip() == "3"
    assert (tmp_path / "build" / "fa" / "build.log.start").read_text().strip().isdigit()
    text = log.read_text()
    assert "arch=12.0" in text
    assert "pdserve job: exit 3" in text
    assert (work / "built-here").exists()
    assert not (src / "built-here").exists()
    assert (work / "pkg" / "kernel.cu").exists()


def test_runner_success_and_missing_workdir(tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    assert subprocess.call(["bash", RUNNER, str(checkout), str(tmp_path / "ok.log"), "", "true"]) == 0
    assert (tmp_path / "ok.log.rc").read_text().strip() == "0"
    assert subprocess.call(["bash", RUNNER, str(tmp_path / "absent"), str(tmp_path / "no.log"), "", "true"]) == 127
    assert (tmp_path / "no.log.rc").read_text().strip() == "127"


def test_runner_removes_the_status_of_an_earlier_run(tmp_path):
    log = tmp_path / "job.log"
    (tmp_path / "job.log.rc").write_text("0\n")
    proc = subprocess.Popen(["bash", RUNNER, str(tmp_path), str(log), "", "sleep 2"])
    try:
        # Once the job has started (its log exists), the status of the earlier run is gone.
        deadline = time.time() + 5
        while time.time() < deadline and not (log.exists() and "pdserve job: start" in log.read_text()):
            time.sleep(0.05)
        assert not (tmp_path / "job.log.rc").exists()
        assert wait(log, seconds="1").splitlines()[0].startswith("running ")
    finally:
        proc.wait()
    assert wait(log).splitlines()[0].startswith("exit 0 after ")


def test_wait_reports_status_elapsed_time_and_log_tail(tmp_path):
    log = tmp_path / "job.log"
    assert wait(log).splitlines() == ["running 0 s"]  # not started yet: no log
    assert subprocess.call(["bash", RUNNER, str(tmp_path), str(log), "", "seq 1 10; exit 2"]) == 2
    lines = wait(log, lines="3").splitlines()
    assert re.match(r"^exit 2 after \d+ s$", lines[0])
    assert lines[1:3] == ["9", "10"]
    assert re.match(r"^pdserve job: exit 2 after \d+ s$", lines[3])


# The values pdserve.sglang.sglang_defaults owns that this role reads under its own prefix: documented, never defaulted here.
SHARED = {"sglang_install_root", "sglang_install_source", "sglang_install_version", "sglang_install_git_version",
          "sglang_install_model_source", "sglang_install_model_revision", "sglang_install_chat_template_source"}


def test_defaults_and_argument_specs_agree():
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    with open(os.path.join(ROLE, "..", "sglang_defaults", "defaults", "main.yml")) as handle:
        shared = yaml.safe_load(handle)
    options = specs["main"]["options"]
    assert sorted(options) == sorted(set(defaults) | SHARED)
    assert SHARED <= set(shared) and not SHARED & set(defaults)
    for name, value in defaults.items():
        assert options[name].get("default") == value, name
        assert options[name].get("description"), name
        if "choices" in options[name]:
            assert value in options[name]["choices"], name
    for name in SHARED:
        assert "default" not in options[name], name
        if "choices" in options[name]:
            assert shared[name] in options[name]["choices"], name
    assert sorted(specs) == ["builds", "main", "preflight"]
    for entry in ("preflight", "builds"):
        for name, option in specs[entry]["options"].items():
            assert option == options[name], (entry, name)
    # builds judges as the preflight does.
    assert set(specs["preflight"]["options"]) < set(specs["builds"]["options"])


def test_every_entry_point_has_a_task_file_and_no_other_is_used_from_outside():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        entries = set(yaml.safe_load(handle)["argument_specs"])
    for entry in entries:
        assert os.path.isfile(os.path.join(ROLE, "tasks", entry + ".yml")), entry
    root = os.path.dirname(os.path.dirname(ROLE))
    used = set()
    for base, _dirs, files in os.walk(root):
        if "/." in base:
            continue
        for name in files:
            if name.endswith(".yml"):
                with open(os.path.join(base, name)) as handle:
                    used.update(re.findall(r"name: pdserve\.sglang\.sglang_install\s*\n\s*tasks_from: (\S+)", handle.read()))
    assert used <= entries, used - entries
