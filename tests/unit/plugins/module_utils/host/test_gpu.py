# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Parsers of module_utils/host/gpu.py against real H200 captures and the synthetic Blackwell host."""

import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import gpu

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gpu")
H200 = os.path.join(FIXTURES, "h200x2")
BLACKWELL = os.path.join(FIXTURES, "blackwell8x")


def read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


class FakeSysfs(object):
    def __init__(self, files=None, dirs=None):
        self.files = files or {}
        self.dirs = dirs or {}

    def read(self, relative):
        return self.files.get(relative)

    def listdir(self, relative):
        return self.dirs.get(relative, [])


# --- query-gpu CSV -------------------------------------------------------------------------


def test_query_csv_with_header_and_units_real_capture():
    rows = gpu.parse_query_gpu_csv(read(H200, "query-gpu.csv"))
    assert len(rows) == 2
    assert rows[0]["index"] == "0"
    assert rows[0]["uuid"] == "GPU-d4e981e6-d71c-dafe-bf35-e55b6f1748a1"
    assert rows[0]["name"] == "NVIDIA H200"
    assert rows[0]["pci.bus_id"] == "00000000:00:06.0"
    assert rows[0]["memory.total"] == "143771"  # unit from the header stripped
    assert rows[0]["power.limit"] == "700.00"
    assert rows[1]["compute_cap"] == "9.0"
    assert rows[1]["driver_version"] == "580.159.04"


def test_query_csv_noheader_nounits_with_given_fields():
    text = "0, GPU-a, NVIDIA H200, 00000000:00:06.0, 143771, 9.0, 580.159.04\n\n"
    rows = gpu.parse_query_gpu_csv(text, gpu.QUERY_FIELDS)
    assert rows == [
        {
            "index": "0",
            "uuid": "GPU-a",
            "name": "NVIDIA H200",
            "pci.bus_id": "00000000:00:06.0",
            "memory.total": "143771",
            "compute_cap": "9.0",
            "driver_version": "580.159.04",
        }
    ]


def test_query_csv_placeholders_become_none():
    rows = gpu.parse_query_gpu_csv("0, [N/A], [Not Supported]\n", ["index", "uuid", "compute_cap"])
    assert rows[0]["uuid"] is None
    assert rows[0]["compute_cap"] is None


def test_query_csv_wrong_column_count_is_an_error():
    with pytest.raises(gpu.GpuParseError, match="has 2 values, expected 3"):
        gpu.parse_query_gpu_csv("0, GPU-a\n", ["index", "uuid", "name"])


def test_query_csv_empty_output_is_no_gpu():
    assert gpu.parse_query_gpu_csv("\n", gpu.QUERY_FIELDS) == []


# --- small parsers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bus_id, address",
    [
        ("00000000:00:06.0", "0000:00:06.0"),
        ("00000000:9C:00.0", "0000:9c:00.0"),
        ("0000:1b:00.0", "0000:1b:00.0"),
        ("00010000:01:00.1", "10000:01:00.1"),  # VMD domains have more than 4 hex digits
    ],
)
def test_pci_sysfs_address(bus_id, address):
    assert gpu.pci_sysfs_address(bus_id) == address


def test_pci_sysfs_address_rejects_garbage():
    with pytest.raises(gpu.GpuParseError):
        gpu.pci_sysfs_address("GPU-0")


@pytest.mark.parametrize("text, node", [("-1\n", None), ("0", 0), ("1\n", 1), ("", None), (None, None)])
def test_parse_numa_node(text, node):
    assert gpu.parse_numa_node(text) == node


@pytest.mark.parametrize(
    "text, cpus",
    [
        ("0-3", [0, 1, 2, 3]),
        ("0-1,8-9\n", [0, 1, 8, 9]),
        ("5", [5]),
        ("", []),
        (None, []),
        ("64-66,192", [64, 65, 66, 192]),
    ],
)
def test_parse_cpulist(text, cpus):
    assert gpu.parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", ["0-", "a-b", "3-1"])
def test_parse_cpulist_rejects_garbage(text):
    with pytest.raises(gpu.GpuParseError):
        gpu.parse_cpulist(text)


def test_compute_capability_and_sm():
    assert gpu.parse_compute_capability("9.0") == (9, 0)
    assert gpu.parse_compute_capability("12.0") == (12, 0)
    assert gpu.parse_compute_capability("[N/A]") is None
    assert gpu.sm_name(9, 0) == "sm_90"
    assert gpu.sm_name(12, 0) == "sm_120"
    with pytest.raises(gpu.GpuParseError):
        gpu.parse_compute_capability("nine")


def test_parse_nvcc_version_real_capture():
    assert gpu.parse_nvcc_version(read(H200, "nvcc-version.txt")) == {"version": "13.0", "full_version": "13.0.88"}
    assert gpu.parse_nvcc_version("bash: nvcc: command not found") is None


# --- nvidia-smi -q -x ----------------------------------------------------------------------


def test_xml_real_h200_capture():
    info = gpu.parse_nvidia_smi_xml(read(H200, "nvidia-smi-q.xml"))
    assert info["driver_version"] == "580.159.04"
    assert info["cuda_version"] == "13.0"
    assert info["attached_gpus"] == 2
    assert [g["uuid"] for g in info["gpus"]] == [
        "GPU-d4e981e6-d71c-dafe-bf35-e55b6f1748a1",
        "GPU-6381a97b-8ee4-2791-1622-a04a7f65c339",
    ]
    first = info["gpus"][0]
    assert first["pci_bus_id"] == "00000000:00:06.0"
    assert first["name"] == "NVIDIA H200"
    assert first["architecture"] == "Hopper"
    assert first["memory_total_mib"] == 143771  # fb memory, not bar1 (262144) listed after it
    assert first["persistence_mode"] == "Enabled"
    assert first["mig_mode"] == "Disabled"
    assert first["minor_number"] == 0


def test_xml_synthetic_blackwell_mig_not_applicable():
    info = gpu.parse_nvidia_smi_xml(read(BLACKWELL, "nvidia-smi-q.xml"))
    assert info["attached_gpus"] == 8
    assert info["gpus"][4]["pci_bus_id"] == "00000000:9C:00.0"
    assert info["gpus"][4]["mig_mode"] is None  # N/A


def test_xml_no_gpu():
    info = gpu.parse_nvidia_smi_xml(
        "<nvidia_smi_log><driver_version>580.1</driver_version><cuda_version>13.0</cuda_version>"
        "<attached_gpus>0</attached_gpus></nvidia_smi_log>"
    )
    assert info == {"driver_version": "580.1", "cuda_version": "13.0", "attached_gpus": 0, "gpus": []}


@pytest.mark.parametrize("text", ["No devices were found", "<html/>", ""])
def test_xml_unreadable(text):
    with pytest.raises(gpu.GpuParseError):
        gpu.parse_nvidia_smi_xml(text)


# --- merge and sysfs -----------------------------------------------------------------------


def test_build_gpu_facts_h200_numa_minus_one_is_none(gpu_sysfs):
    rows = gpu.parse_query_gpu_csv(read(H200, "query-gpu.csv"))
    xml_info = gpu.parse_nvidia_smi_xml(read(H200, "nvidia-smi-q.xml"))
    gpus = gpu.build_gpu_facts(rows, xml_info, gpu.SysfsReader(gpu_sysfs("h200x2")))
    assert [g["index"] for g in gpus] == [0, 1]
    first = gpus[0]
    assert first["numa_node"] is None
    assert first["compute_capability"] == "9.0"
    assert (first["compute_capability_major"], first["compute_capability_minor"]) == (9, 0)
    assert first["sm"] == "sm_90"
    assert first["memory_total_mib"] == 143771
    assert first["pci_address"] == "0000:00:06.0"
    assert first["local_cpulist"] == "0-31"
    assert first["local_cpus"] == list(range(32))
    assert first["architecture"] == "Hopper"


def test_build_gpu_facts_matches_xml_by_uuid_and_sorts_by_index():
    rows = [
        {"index": "1", "uuid": "GPU-b", "name": "B", "pci.bus_id": "00000000:02:00.0", "memory.total": "10",
         "compute_cap": "9.0"},
        {"index": "0", "uuid": "GPU-a", "name": "A", "pci.bus_id": "00000000:01:00.0", "memory.total": "10",
         "compute_cap": "9.0"},
    ]
    xml_info = {"gpus": [
        {"uuid": "GPU-a", "pci_bus_id": "00000000:01:00.0", "architecture": "ArchA"},
        {"uuid": "GPU-b", "pci_bus_id": "00000000:02:00.0", "architecture": "ArchB"},
    ]}
    sysfs = FakeSysfs({"sys/bus/pci/devices/0000:02:00.0/numa_node": "1"})
    gpus = gpu.build_gpu_facts(rows, xml_info, sysfs)
    assert [(g["index"], g["uuid"], g["architecture"], g["numa_node"]) for g in gpus] == [
        (0, "GPU-a", "ArchA", None),
        (1, "GPU-b", "ArchB", 1),
    ]
    # No local_cpulist file: null, and an empty CPU list.
    assert gpus[0]["local_cpulist"] is None
    assert gpus[0]["local_cpus"] == []


def test_read_numa_nodes_synthetic_blackwell(gpu_sysfs):
    nodes = gpu.read_numa_nodes(gpu.SysfsReader(gpu_sysfs("blackwell8x")))
    assert [n["id"] for n in nodes] == [0, 1]  # "online"/"possible" files are not nodes
    assert nodes[0]["cpulist"] == "0-63,128-191"
    assert nodes[1]["cpus"] == list(range(64, 128)) + list(range(192, 256))


def test_read_numa_nodes_sorted_numerically_and_missing_dir():
    sysfs = FakeSysfs(
        {"sys/devices/system/node/node10/cpulist": "10", "sys/devices/system/node/node2/cpulist": "2"},
        {"sys/devices/system/node": ["node10", "node2", "has_cpu"]},
    )
    assert [n["id"] for n in gpu.read_numa_nodes(sysfs)] == [2, 10]
    assert gpu.read_numa_nodes(gpu.SysfsReader("/nonexistent-sysfs-root")) == []


# --- GpuDiscovery with a scripted run_command ---------------------------------------------


class Script(object):
    """run_command stand-in answering by the first argument after the nvidia-smi path."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        key = argv[1] if argv[0] == "nvidia-smi" else argv[0]
        answer = self.answers[key.split("=")[0]]
        return answer.pop(0) if isinstance(answer, list) else answer


def blackwell_answers():
    rows = gpu.parse_query_gpu_csv(read(BLACKWELL, "query-gpu.csv"))
    csv_text = "".join(", ".join(r[f] for f in gpu.QUERY_FIELDS) + "\n" for r in rows)
    return {"--query-gpu": (0, csv_text, ""), "-q": (0, read(BLACKWELL, "nvidia-smi-q.xml"), "")}


def test_discovery_blackwell_numa_mapping(gpu_sysfs):
    script = Script(blackwell_answers())
    discovery = gpu.GpuDiscovery(script, "nvidia-smi", gpu.SysfsReader(gpu_sysfs("blackwell8x")))
    facts = discovery.discover()
    assert facts["gpu_count"] == 8
    assert facts["driver_version"] == "580.95.05"
    assert facts["cuda_version"] == "13.0"
    assert facts["cuda_toolkit_version"] is None  # no nvcc given
    assert [g["numa_node"] for g in facts["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert {g["compute_capability"] for g in facts["gpus"]} == {"12.0"}
    assert {g["sm"] for g in facts["gpus"]} == {"sm_120"}
    assert facts["gpus"][4]["pci_address"] == "0000:9c:00.0"
    assert facts["gpus"][4]["local_cpus"] == facts["numa_nodes"][1]["cpus"]
    assert facts["gpus"][0]["local_cpus"] == facts["numa_nodes"][0]["cpus"]
    assert script.calls[0] == [
        "nvidia-smi",
        "--query-gpu=index,uuid,name,pci.bus_id,memory.total,compute_cap,driver_version",
        "--format=csv,noheader,nounits",
    ]


def test_discovery_old_driver_retries_without_compute_cap():
    answers = blackwell_answers()
    rows = gpu.parse_query_gpu_csv(read(BLACKWELL, "query-gpu.csv"))
    fields = [f for f in gpu.QUERY_FIELDS if f != "compute_cap"]
    old_csv = "".join(", ".join(r[f] for f in fields) + "\n" for r in rows)
    answers["--query-gpu"] = [(2, 'Field "compute_cap" is not a valid field to query.\n', ""), (0, old_csv, "")]
    discovery = gpu.GpuDiscovery(Script(answers), "nvidia-smi", FakeSysfs())
    facts = discovery.discover()
    assert facts["gpu_count"] == 8
    assert facts["gpus"][0]["compute_capability"] is None
    assert facts["gpus"][0]["memory_total_mib"] == 97887
    assert any("compute_cap" in w for w in discovery.warnings)


def test_discovery_driver_failure_quotes_output():
    failure = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    script = Script({"--query-gpu": (9, failure + "\n", "")})
    with pytest.raises(gpu.GpuDiscoveryError) as info:
        gpu.GpuDiscovery(script, "nvidia-smi", FakeSysfs()).discover()
    assert info.value.kind == "failed"
    assert info.value.rc == 9
    assert failure in info.value.msg
    assert "nvidia_driver role" in info.value.msg


def test_discovery_no_devices_keeps_driver_version_when_xml_has_it():
    script = Script({
        "--query-gpu": (6, "No devices were found\n", ""),
        "-q": (0, "<nvidia_smi_log><driver_version>580.1</driver_version><attached_gpus>0</attached_gpus>"
                  "</nvidia_smi_log>", ""),
    })
    with pytest.raises(gpu.NoGpuFound) as info:
        gpu.GpuDiscovery(script, "nvidia-smi", FakeSysfs()).discover()
    assert info.value.kind == "no_gpu"
    assert info.value.facts["gpus"] == []
    assert info.value.facts["driver_version"] == "580.1"
    assert "lspci" in info.value.msg


def test_discovery_xml_failure_with_gpus_is_an_error():
    answers = blackwell_answers()
    answers["-q"] = (15, "Unable to determine the device handle for GPU0000:9C:00.0: GPU is lost.\n", "")
    with pytest.raises(gpu.GpuDiscoveryError) as info:
        gpu.GpuDiscovery(Script(answers), "nvidia-smi", FakeSysfs()).discover()
    assert "GPU is lost" in info.value.msg
    assert info.value.rc == 15


def test_discovery_nvcc_version_and_unreadable_nvcc():
    answers = blackwell_answers()
    answers["/opt/cuda/bin/nvcc"] = (0, read(BLACKWELL, "nvcc-version.txt"), "")
    facts = gpu.GpuDiscovery(Script(answers), "nvidia-smi", FakeSysfs(), nvcc="/opt/cuda/bin/nvcc").discover()
    assert facts["cuda_toolkit_version"] == "12.9"
    assert facts["cuda_version"] == "13.0"

    answers = blackwell_answers()
    answers["/opt/cuda/bin/nvcc"] = (127, "", "nvcc: error while loading shared libraries")
    discovery = gpu.GpuDiscovery(Script(answers), "nvidia-smi", FakeSysfs(), nvcc="/opt/cuda/bin/nvcc")
    assert discovery.discover()["cuda_toolkit_version"] is None
    assert any("nvcc" in w for w in discovery.warnings)
