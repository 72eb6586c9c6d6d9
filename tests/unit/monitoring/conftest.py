# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Shared fixtures of the monitoring tests: the real promtool, the committed metric-name lists."""

import os
import subprocess

import pytest

CACHE = os.environ.get("PDSERVE_CACHE", "/var/cache/pdserve")
APT_ROOT = os.path.join(CACHE, "apt-monitoring", "root", "usr", "bin")


def _tool(name):
    path = os.path.join(APT_ROOT, name)
    if not os.access(path, os.X_OK):
        pytest.fail("%s is missing: scripts/setup.sh unpacks Debian's prometheus package into %s"
                    % (name, APT_ROOT))
    return path


@pytest.fixture(scope="session")
def promtool():
    """run(*args) -> CompletedProcess of Debian 12's promtool 2.42."""
    path = _tool("promtool")

    def run(*args, cwd=None):
        return subprocess.run([path] + list(args), capture_output=True, text=True, timeout=120, cwd=cwd,
                              check=False)
    return run


@pytest.fixture(scope="session")
def amtool():
    path = _tool("amtool")

    def run(*args):
        return subprocess.run([path] + list(args), capture_output=True, text=True, timeout=60, check=False)
    return run
