# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Imports the installed pdserve_vecadd and runs its kernel on the GPU against torch's own a + b; prints one JSON
object (what was imported from where, the GPU architectures in the extension's fatbinary as cuobjdump lists them,
the kernel's result) and exits 1 when the kernel was wrong or could not run.

Run it with -I (python -I run_kernel.py) so that the installed package is imported, not a source tree beside it.
--dry: a machine without torch or a GPU (the Ansible side tried elsewhere): import the package only."""

import json
import os
import re
import shutil
import subprocess
import sys
import time


def fatbin_archs(path):
    """sm_XX of the ELF images cuobjdump lists in the extension (empty when cuobjdump is missing)."""
    tool = shutil.which("cuobjdump") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "cuobjdump")
    if not os.access(tool, os.X_OK):
        return {"tool": None, "sm": [], "ptx": []}
    elf = subprocess.run([tool, "--list-elf", path], capture_output=True, text=True, check=False)
    ptx = subprocess.run([tool, "--list-ptx", path], capture_output=True, text=True, check=False)
    return {"tool": tool, "sm": sorted(set(re.findall(r"\.(sm_\d+a?)\.cubin", elf.stdout))),
            "ptx": sorted(set(re.findall(r"\.(sm_\d+a?)\.ptx", ptx.stdout))), "rc": elf.returncode}


def main():
    result = {"python": sys.version.split()[0], "executable": sys.executable, "ok": False}
    started = time.perf_counter()
    if "--dry" in sys.argv:
        import pdserve_vecadd
        result.update(dry=True, package=pdserve_vecadd.__file__, ok=True,
                      import_s=round(time.perf_counter() - started, 3))
        print(json.dumps(result, sort_keys=True))
        return 0
    import torch
    import pdserve_vecadd
    from pdserve_vecadd import _C
    result.update(import_s=round(time.perf_counter() - started, 3), package=pdserve_vecadd.__file__, extension=_C.__file__,
                  extension_mtime=os.stat(_C.__file__).st_mtime, torch=torch.__version__, torch_cuda=torch.version.cuda,
                  fatbinary=fatbin_archs(_C.__file__))
    props = torch.cuda.get_device_properties(0)
    result["gpu"] = {"name": props.name, "capability": "%d.%d" % (props.major, props.minor),
                     "sm": "sm_%d%d" % (props.major, props.minor), "multiprocessors": props.multi_processor_count}
    torch.manual_seed(0)
    runs = []
    # A size that is no multiple of the block (the tail) and a large one (many blocks).
    for n in (1_000_003, 1 << 26):
        a = torch.randn(n, device="cuda", dtype=torch.float32)
        b = torch.randn(n, device="cuda", dtype=torch.float32)
        c = pdserve_vecadd.vector_add(a, b)
        torch.cuda.synchronize()
        expected = a + b
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _launch in range(20):
            pdserve_vecadd.vector_add(a, b)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / 20
        runs.append({"n": n, "equal_to_torch": bool(torch.equal(c, expected)),
                     "max_abs_diff": float((c - expected).abs().max().item()),
                     "sample": [round(float(x), 6) for x in c[:3].tolist()],
                     "mean_ms": round(ms, 4), "gb_per_s": round(3 * 4 * n / (ms * 1e-3) / 1e9, 1)})
    result["kernel"] = runs
    result["ok"] = all(r["equal_to_torch"] for r in runs) and result["gpu"]["sm"] in result["fatbinary"]["sm"]
    print(json.dumps(result, sort_keys=True))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
