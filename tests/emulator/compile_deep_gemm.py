# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPU-free stand-in for ``python -m sglang.compile_deep_gemm`` (see README.md here)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sglemu import compile_deep_gemm  # noqa: E402

if __name__ == "__main__":
    sys.exit(compile_deep_gemm.main())
