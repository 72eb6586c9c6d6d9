# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The KV fabric probe on a real GPU: two NIXL agents in one process move a buffer both ways, and UCX says how.

    python3 tests/device/kv_fabric.py OUTDIR [SIZE_MIB]

Runs ``plugins/module_utils/validation/kv_fabric.py``'s ``probe_in_process`` once per case, each in a child process
(UCX reads its environment when NIXL creates its context): host memory, GPU memory with UCX's defaults, and GPU memory
with UCX's CUDA transports asked for by name. Writes ``<case>.json`` (the probe's figures, what UCX chose, the judgement
against the CUDA transports) and ``<case>.ucx.txt`` (UCX's own lines) into OUTDIR, prints one line per case, and exits
non-zero only when a case could not run at all: a slow or emulated path is a finding, not an error.

One GPU proves that NIXL and UCX register and move GPU memory there, and through what; not the fabric between hosts.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
# (case, memory, extra environment): UCX_TLS names the transports UCX may use ("^" would exclude instead).
CASES = (
    ("dram", "DRAM", {}),
    ("vram", "VRAM", {}),
    ("vram-cuda-tls", "VRAM", {"UCX_TLS": "cuda_copy,cuda_ipc,sm,self,tcp"}),
)
# What a GPU-to-GPU copy on one host should use; anything else moving GPU memory is reported.
GPU_TRANSPORTS = ["cuda_copy", "cuda_ipc", "gdr_copy"]


def load():
    """This checkout as the collection pdserve.sglang (the device machine has no Ansible), then the probe's module."""
    tree = pathlib.Path(tempfile.mkdtemp()) / "ansible_collections" / "pdserve"
    tree.mkdir(parents=True)
    (tree / "sglang").symlink_to(ROOT)
    sys.path.insert(0, str(tree.parents[1]))
    from ansible_collections.pdserve.sglang.plugins.module_utils.validation import kv_fabric  # noqa: E402
    return kv_fabric


def child(out: pathlib.Path, case: str, memory: str, size_mib: int) -> None:
    fabric = load()
    result = fabric.probe_in_process(memory=memory, size_mib=size_mib, rounds=4)
    (out / (case + ".ucx.txt")).write_text(result.pop("ucx_output"), encoding="utf-8")
    result["case"] = case
    result["ucx_tls"] = os.environ.get("UCX_TLS", "")
    result["problems"] = fabric.judge(result, expect=GPU_TRANSPORTS if memory == "VRAM" else None)
    (out / (case + ".json")).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    out = pathlib.Path(sys.argv[1])
    size_mib = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    if len(sys.argv) > 3:
        child(out, sys.argv[3], sys.argv[4], size_mib)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for case, memory, extra in CASES:
        env = dict(os.environ, **extra)
        run = subprocess.run([sys.executable, __file__, str(out), str(size_mib), case, memory], env=env, timeout=300,
                             capture_output=True, text=True, check=False)
        if run.returncode != 0:
            failed += 1
            print("%s: could not run (exit %d): %s" % (case, run.returncode, run.stderr[-2000:]))
            continue
        result = json.loads((out / (case + ".json")).read_text(encoding="utf-8"))
        print("%s: %s MiB %s, %s; data through %s%s; problems: %s" % (
            case, size_mib, memory, ", ".join("%s->%s %.2f GB/s%s" % (d["from"][-1], d["to"][-1], d["gbps"],
                                                                      "" if d["intact"] else " CORRUPT")
                                              for d in result["directions"]),
            ", ".join(result["transports"]) or "(no transport named)",
            " (software emulation)" if result["emulated"] else "", result["problems"] or "none"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
