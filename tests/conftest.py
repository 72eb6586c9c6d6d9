# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fixtures shared by unit and integration tests."""

import importlib.util
import os
import sys

import pytest

# tests/support: helpers every test may import (serving_support: the shared defaults, read from their owner).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))

GPU_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unit", "fixtures", "gpu")


def _load_sysfs_tree():
    spec = importlib.util.spec_from_file_location("pdserve_sysfs_tree", os.path.join(GPU_FIXTURES, "sysfs_tree.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SYSFS_TREE = _load_sysfs_tree()


@pytest.fixture(scope="session")
def sysfs_tree():
    """The module tests/unit/fixtures/gpu/sysfs_tree.py (read_list, build)."""
    return _SYSFS_TREE


@pytest.fixture(scope="session")
def gpu_sysfs(tmp_path_factory):
    """gpu_sysfs(capture) -> a sysfs root built from tests/unit/fixtures/gpu/<capture>/sysfs.txt."""
    built = {}

    def get(capture):
        if capture not in built:
            built[capture] = _SYSFS_TREE.build(capture, str(tmp_path_factory.mktemp("sysfs-" + capture)))
        return built[capture]
    return get
