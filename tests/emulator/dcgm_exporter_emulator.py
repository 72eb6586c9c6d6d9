"""EMULATED GPU exporter: a stand-in for NVIDIA's dcgm-exporter (4.5.3-4.8.2) on a machine without GPUs.

    python3 dcgm_exporter_emulator.py -f COUNTERS.csv --capture nvidia-smi-q.xml -a 127.0.0.1:9400

It serves /metrics in dcgm-exporter's text format (its rendermetrics template: one HELP/TYPE block per
counter of the counters file, samples labelled gpu, UUID, pci_bus_id, device, modelName, Hostname and the
``label`` fields such as DCGM_FI_DRIVER_VERSION) with values from a real ``nvidia-smi -q -x`` capture
(tests/unit/fixtures/gpu/h200x1: one H200). Standard library only (it runs on the test container's
system Python).

Where it deliberately differs from the real exporter:
- values are the capture's, constant, except DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, which integrates the
  captured power draw since start (mJ), so rates move;
- DCGM_FI_PROF_* (profiling) counters are skipped, as the real exporter does when the DCGM profiling module
  is not loaded (the reference host's RTX PRO 6000 case): dashboards must treat them as optional;
- fields the capture has no value for (XID errors, NVLink bandwidth, vGPU licence) are 0;
- no sample says it is emulated (names and labels stay the real exporter's): the program's name, its
  systemd unit and its start line do.
"""
import argparse
import csv
import os
import re
import socket
import sys
import threading
import time
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# counter -> where its value is in the capture (path under <gpu>)
FIELDS = {
    "DCGM_FI_DEV_SM_CLOCK": "clocks/sm_clock",
    "DCGM_FI_DEV_MEM_CLOCK": "clocks/mem_clock",
    "DCGM_FI_DEV_MEMORY_TEMP": "temperature/memory_temp",
    "DCGM_FI_DEV_GPU_TEMP": "temperature/gpu_temp",
    "DCGM_FI_DEV_POWER_USAGE": "gpu_power_readings/instant_power_draw",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "pci/replay_counter",
    "DCGM_FI_DEV_GPU_UTIL": "utilization/gpu_util",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "utilization/memory_util",
    "DCGM_FI_DEV_ENC_UTIL": "utilization/encoder_util",
    "DCGM_FI_DEV_DEC_UTIL": "utilization/decoder_util",
    "DCGM_FI_DEV_FB_FREE": "fb_memory_usage/free",
    "DCGM_FI_DEV_FB_USED": "fb_memory_usage/used",
    "DCGM_FI_DEV_FB_RESERVED": "fb_memory_usage/reserved",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "remapped_rows/remapped_row_unc",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "remapped_rows/remapped_row_corr",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "remapped_rows/remapped_row_failure",
}
LABEL_FIELDS = {"DCGM_FI_DRIVER_VERSION": "driver_version", "DCGM_FI_NVML_VERSION": "nvml_version"}


def read_counters(path):
    """[(field, prometheus type, help)] of a dcgm-exporter counters file (comments skipped)."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for row in csv.reader(handle):
            if not row or row[0].strip().startswith("#"):
                continue
            field, kind, doc = row[0].strip(), row[1].strip(), ",".join(row[2:]).strip()
            out.append((field, kind, doc))
    return out


def _number(text):
    """'345 MHz' -> 345.0, 'No' -> 0, 'Yes' -> 1, 'N/A' -> None."""
    text = (text or "").strip()
    if text in ("No", "Disabled"):
        return 0.0
    if text in ("Yes", "Enabled"):
        return 1.0
    match = re.match(r"^-?\d+(\.\d+)?", text)
    return float(match.group(0)) if match else None


def read_capture(path):
    """Per GPU: {"labels": {...}, "values": {field: value}} from an nvidia-smi -q -x capture."""
    root = ET.parse(path).getroot()
    driver = root.findtext("driver_version") or ""
    gpus = []
    for gpu in root.findall("gpu"):
        minor = gpu.findtext("minor_number") or str(len(gpus))
        values = {}
        for field, xpath in FIELDS.items():
            value = _number(gpu.findtext(xpath))
            if value is not None:
                values[field] = value
        gpus.append({"labels": {"gpu": minor, "UUID": gpu.findtext("uuid") or "",
                                "pci_bus_id": gpu.get("id") or gpu.findtext("pci/pci_bus_id") or "",
                                "device": "nvidia%s" % minor,
                                "modelName": gpu.findtext("product_name") or ""},
                     "values": values, "driver_version": driver})
    return gpus


class Exporter:
    def __init__(self, counters, gpus, hostname):
        self.counters = [c for c in counters if not c[0].startswith("DCGM_FI_PROF_")]
        self.label_fields = [c[0] for c in self.counters if c[1] == "label"]
        self.gpus = gpus
        self.hostname = hostname
        self.started = time.monotonic()

    def value(self, gpu, field):
        if field == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
            watts = gpu["values"].get("DCGM_FI_DEV_POWER_USAGE", 0.0)
            return watts * (time.monotonic() - self.started) * 1000.0
        return gpu["values"].get(field, 0.0)

    def render(self):
        lines = []
        for field, kind, doc in self.counters:
            if kind == "label":
                continue
            lines.append("# HELP %s %s" % (field, doc))
            lines.append("# TYPE %s %s" % (field, kind))
            for gpu in self.gpus:
                labels = dict(gpu["labels"])
                labels["Hostname"] = self.hostname
                for label_field in self.label_fields:
                    labels[label_field] = gpu.get(LABEL_FIELDS.get(label_field, ""), "")
                text = ",".join('%s="%s"' % (k, v) for k, v in labels.items())
                value = self.value(gpu, field)
                shown = ("%d" % value) if float(value).is_integer() else ("%f" % value)
                lines.append("%s{%s} %s" % (field, text, shown))
        return "\n".join(lines) + "\n"


def serve(exporter, host, port):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 (http.server API)
            if self.path.split("?")[0] != "/metrics":
                body, status, ctype = b"emulated dcgm-exporter: see /metrics\n", 404, "text/plain"
            else:
                body, status, ctype = exporter.render().encode(), 200, "text/plain; version=0.0.4; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main(argv=None):
    parser = argparse.ArgumentParser(description="EMULATED dcgm-exporter (no GPU, no DCGM): values from a capture")
    parser.add_argument("-f", "--collectors", required=True, help="counters file (dcgm-exporter's -f)")
    parser.add_argument("--capture", required=True, help="nvidia-smi -q -x output to take values from")
    parser.add_argument("-a", "--address", default=":9400", help="listen address, host:port (dcgm-exporter's -a)")
    args = parser.parse_args(argv)
    host, _sep, port = args.address.rpartition(":")
    exporter = Exporter(read_counters(args.collectors), read_capture(args.capture), socket.gethostname())
    server = serve(exporter, host or "0.0.0.0", int(port))
    print("EMULATED dcgm-exporter on %s (%d GPU(s) from %s, counters %s)"
          % (args.address, len(exporter.gpus), os.path.basename(args.capture), args.collectors), flush=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
