# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""roles/sglang_operations/files/pdserve_bench.py through the real router in front of the emulator: the plumbing
(streaming and not, usage-based token counts, JSON and CSV), nothing about speed. The table is printed."""
import csv
import json
import os
import subprocess
import sys

import pytest

import stack

pytestmark = pytest.mark.integration
BENCH = os.path.join(stack.REPO, "roles", "sglang_operations", "files", "pdserve_bench.py")


@pytest.mark.parametrize("stream", [True, False])
def test_benchmark_through_the_router(pd_stack, tmp_path, stream):
    pd = pd_stack(router_args=["--api-key", "bench-key"])
    out_json, out_csv = str(tmp_path / "b.json"), str(tmp_path / "b.csv")
    cmd = [sys.executable, BENCH, "--url", pd.router_url, "--model", pd.model, "--concurrency", "1", "4",
           "--requests", "8", "--input-len", "40", "--output-len", "16", "--json", out_json, "--csv", out_csv]
    proc = subprocess.run(cmd + ([] if stream else ["--no-stream"]), capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PDSERVE_BENCH_API_KEY="bench-key"), check=False)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bench-key" not in proc.stdout + proc.stderr
    levels = json.load(open(out_json))["levels"]
    assert [(lv["concurrency"], lv["requests"], lv["failed"]) for lv in levels] == [(1, 8, 0), (4, 8, 0)]
    for level in levels:
        assert level["input_tokens_per_s"] > 0 and level["output_tokens_per_s"] > 0
        assert level["ttft_p50_ms"] <= level["e2e_p50_ms"] <= level["e2e_p99_ms"]
        assert (level["itl_p50_ms"] is not None) == stream
    assert [r["concurrency"] for r in csv.DictReader(open(out_csv))] == ["1", "4"]
