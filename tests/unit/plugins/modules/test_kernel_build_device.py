# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real kernel build on the H200 device machine (tests/device/kernel_build.sh), replayed from its results in
tests/unit/fixtures/gpu/h200x1_kernel_build: sglang_install's builds entry point compiled tests/device/kernel_ext for
the GPU's architecture (sm_90) as the build user, the installed extension's kernel agreed with torch on the GPU, and
a second run with the same inputs skipped the compile. The decisions are replayed through inputs_record's main()
with the inputs the machine recorded, and the recorded source hash must be that of the committed source.
"""

import json
import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.install.inputs_record import tree_hash
from ansible_collections.pdserve.sglang.plugins.modules import inputs_record

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
RESULTS = os.path.join(REPO, "tests", "unit", "fixtures", "gpu", "h200x1_kernel_build")
SOURCE = os.path.join(REPO, "tests", "device", "kernel_ext")

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(RESULTS, "second.json")),
                                reason="no results of tests/device/kernel_build.sh in %s yet" % RESULTS)


def _load(name):
    with open(os.path.join(RESULTS, name)) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def probe():
    return _load("probe.json")


@pytest.fixture(scope="module")
def first():
    return _load("first.json")


@pytest.fixture(scope="module")
def second():
    return _load("second.json")


@pytest.fixture(scope="module")
def build_log():
    with open(os.path.join(RESULTS, "build.log")) as handle:
        return handle.read()


def test_the_machine_was_the_h200_with_nvcc_and_torch(probe):
    assert not probe["dry"]
    assert probe["gpu"].startswith("NVIDIA H200, 9.0, ")
    assert probe["arch_list"] == "9.0"
    assert "release 13.0" in probe["nvcc"][0]
    assert probe["packages"]["torch"]
    # The role ran against that machine's own Python: its prefix was the role's venv.
    assert probe["python"] == probe["prefix"] + "/bin/python"


def test_first_run_compiled_for_sm_90(first, build_log):
    assert first["inputs"]["message"] == "no record of an earlier run: running"
    current = first["inputs"]["current"]
    assert current["arch_list"] == "9.0" and current["cuda"].startswith("13.0") and current["torch"]
    assert first["build_started"] != first["build_started_before"]
    assert first["build_seconds"] > 0
    # TORCH_CUDA_ARCH_LIST=9.0 reached nvcc as real sm_90 code, and the build ended well.
    assert "arch=compute_90,code=sm_90" in build_log
    assert "pdserve job: exit 0 after %d s" % first["build_seconds"] in build_log


@pytest.mark.parametrize("run", ["first", "second"])
def test_the_installed_kernel_ran_on_the_gpu_and_agreed_with_torch(run, first, second):
    kernel = {"first": first, "second": second}[run]["kernel"]
    assert kernel["ok"] and not kernel.get("dry")
    assert kernel["gpu"]["sm"] == "sm_90" and kernel["gpu"]["name"] == "NVIDIA H200"
    # The fatbinary holds machine code for the GPU's architecture (cuobjdump --list-elf of the installed _C).
    assert "sm_90" in kernel["fatbinary"]["sm"]
    assert kernel["extension"].startswith(kernel["executable"].rsplit("/bin/", 1)[0])
    assert [r["n"] for r in kernel["kernel"]] == [1000003, 1 << 26]
    for result in kernel["kernel"]:
        assert result["equal_to_torch"] and result["max_abs_diff"] == 0.0


def test_second_run_skipped_the_compile(first, second):
    assert second["inputs"]["differs"] == []
    assert second["inputs"]["message"] == "inputs unchanged since the last run: skipped"
    assert second["inputs"]["current"] == first["inputs"]["current"]
    # The check (the extension imports, as the service user) passed, so nothing forced a build either.
    assert second["check_rc"] == 0 and first["check_rc"] != 0
    # No job started, the record was not rewritten, the installed extension is the first run's.
    assert second["build_started"] == first["build_started"]
    assert second["record_mtime"] == first["record_mtime"]
    assert second["kernel"]["extension_mtime"] == first["kernel"]["extension_mtime"]
    assert second["wall_seconds"] < first["wall_seconds"]


def test_the_recorded_source_is_the_committed_one(first):
    assert first["inputs"]["current"]["tree_sha256"] == tree_hash(SOURCE)


def test_replayed_decisions(first, module_runner, tmp_path):
    """inputs_record's main() with the machine's inputs: no record runs, the same inputs skip, another arch list runs."""
    current = first["inputs"]["current"]
    record = tmp_path / "pdserve-build-inputs.json"
    result, failed = module_runner(inputs_record.main, {"path": str(record), "inputs": current})
    assert not failed and result["message"] == first["inputs"]["message"]
    record.write_text(json.dumps(current))
    result, failed = module_runner(inputs_record.main, {"path": str(record), "inputs": current})
    assert not failed and result["differs"] == [] and result["message"] == "inputs unchanged since the last run: skipped"
    result, failed = module_runner(inputs_record.main, {"path": str(record), "inputs": dict(current, arch_list="12.0")})
    assert not failed and result["differs"] == ["arch_list"]
