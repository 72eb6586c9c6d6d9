# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The driver preflight refuses with problems.report, like every other domain (filter nvidia_driver_refusal)."""

import pathlib

from ansible_collections.pdserve.sglang.plugins.filter.nvidia_driver import nvidia_driver_refusal

ROLE = pathlib.Path(__file__).resolve().parents[4] / "roles" / "nvidia_driver"
PROBLEMS = [
    {"variable": "nvidia_driver_require_gpu", "message": "no NVIDIA GPU on the PCI bus",
     "fix": "run the role on GPU hosts only, or set nvidia_driver_require_gpu: false"},
    {"variable": "nvidia_driver_kernel_module", "message": "GPU(s) 0000:1b:00.0 (10de:2bb5, Blackwell) need the open "
     "kernel modules", "fix": "set nvidia_driver_kernel_module: open"},
]


def test_the_refusal_names_host_variable_message_and_fix_and_says_nothing_changed():
    assert nvidia_driver_refusal(PROBLEMS, "gpu-1") == (
        "nvidia_driver preflight of gpu-1 (nothing was changed) found 2 problem(s):\n"
        "- host gpu-1: nvidia_driver_require_gpu: no NVIDIA GPU on the PCI bus; run the role on GPU hosts only, or set "
        "nvidia_driver_require_gpu: false\n"
        "- host gpu-1: nvidia_driver_kernel_module: GPU(s) 0000:1b:00.0 (10de:2bb5, Blackwell) need the open kernel "
        "modules; set nvidia_driver_kernel_module: open")


def test_the_preflight_refuses_through_the_filter():
    text = (ROLE / "tasks" / "preflight.yml").read_text(encoding="utf-8")
    assert "pdserve.sglang.nvidia_driver_refusal(inventory_hostname)" in text
    assert "{% for" not in text
