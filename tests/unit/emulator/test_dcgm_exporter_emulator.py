# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulated GPU exporter serves the pinned counters file's metrics with the H200 capture's values."""

import os
import re
import threading
import time
import urllib.request

import dcgm_exporter_emulator as dcgm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COUNTERS = os.path.join(ROOT, "roles", "monitoring", "files", "gpu-exporter-counters.csv")
CAPTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "gpu", "h200x1", "nvidia-smi-q.xml")


def _exporter():
    return dcgm.Exporter(dcgm.read_counters(COUNTERS), dcgm.read_capture(CAPTURE), "gpu-host-1")


class _Sample:
    def __init__(self, labels, value):
        self.labels, self.value = labels, value


def _samples(text):
    """{name: sample} as Prometheus stores them (dcgm-exporter counters have no _total suffix)."""
    out = {}
    for line in text.splitlines():
        match = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
            out[match.group(1)] = _Sample(labels, float(match.group(3)))
    return out


def test_every_non_profiling_counter_is_served_with_the_real_labels():
    counters = dcgm.read_counters(COUNTERS)
    samples = _samples(_exporter().render())
    wanted = [f for f, kind, dummy in counters if kind != "label" and not f.startswith("DCGM_FI_PROF_")]
    assert len(wanted) >= 19
    missing = [f for f in wanted if f not in samples]
    assert not missing, missing
    labels = samples["DCGM_FI_DEV_GPU_TEMP"].labels
    assert labels == {"gpu": "0", "UUID": "GPU-dbd08cac-63b9-1ae6-1064-60368e861674",
                      "pci_bus_id": "00000000:00:06.0", "device": "nvidia0", "modelName": "NVIDIA H200",
                      "Hostname": "gpu-host-1", "DCGM_FI_DRIVER_VERSION": "580.159.04"}
    assert not [n for n in samples if n.startswith("DCGM_FI_PROF_")]


def test_values_come_from_the_capture():
    samples = _samples(_exporter().render())
    assert samples["DCGM_FI_DEV_GPU_TEMP"].value == 32
    assert samples["DCGM_FI_DEV_MEMORY_TEMP"].value == 37
    assert samples["DCGM_FI_DEV_SM_CLOCK"].value == 345
    assert samples["DCGM_FI_DEV_FB_FREE"].value == 143156
    assert samples["DCGM_FI_DEV_FB_RESERVED"].value == 616
    assert samples["DCGM_FI_DEV_POWER_USAGE"].value == 77.1
    assert samples["DCGM_FI_DEV_ROW_REMAP_FAILURE"].value == 0
    assert samples["DCGM_FI_DEV_XID_ERRORS"].value == 0


def test_energy_counter_integrates_the_power_draw():
    exporter = _exporter()
    first = exporter.value(exporter.gpus[0], "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    time.sleep(0.05)
    second = exporter.value(exporter.gpus[0], "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    assert second - first >= 77.1 * 0.05 * 1000 * 0.9


def test_serves_metrics_over_http():
    server = dcgm.serve(_exporter(), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as resp:
            text = resp.read().decode()
        assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in text
    finally:
        server.shutdown()
