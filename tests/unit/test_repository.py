# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Rules for the files of the repository itself."""

import os
import re
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPU_FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "gpu")


def _git_files():
    out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                         stdout=subprocess.PIPE).stdout.decode("utf-8")
    return [path for path in out.split("\0") if path]


def test_no_path_contains_a_colon():
    """':' is illegal in collection file names (ansible-test no-illegal-filenames, Windows)."""
    files = _git_files()
    assert len(files) > 50, "git listed almost nothing: is this a checkout?"
    bad = [path for path in files if ":" in path]
    assert not bad, "paths with ':' (build such trees at test time instead): %s" % bad[:10]


def test_no_key_file_is_tracked():
    """The password lookup's key files (README "Router keys") are made per checkout and never committed; under an
    inventory directory a file that is not dot-named is also parsed as inventory (a key would become a host name)."""
    inventory = re.compile(r"^(inventories|extensions/molecule/[^/]+/inventory)/")
    bad = [path for path in _git_files() if inventory.match(path)
           and (re.search(r"/\.?credentials/", path) or re.search(r"-(api-key|password|token)$", path))]
    assert not bad, "key files in the repository (git rm them; .gitignore covers .credentials/): %s" % bad


@pytest.mark.parametrize("capture", ["h200x1", "h200x2"])
def test_sysfs_list_matches_the_captured_host(capture, gpu_sysfs, sysfs_tree):
    """The real captures' sysfs lists hold what host.txt recorded for each GPU's PCI device."""
    files = sysfs_tree.read_list(capture)
    with open(os.path.join(GPU_FIXTURES, capture, "host.txt")) as handle:
        recorded = re.findall(r"^/(sys/bus/pci/devices/\S+) (.+)$", handle.read(), re.MULTILINE)
    assert recorded, "host.txt of %s records no PCI device" % capture
    for device, fields in recorded:
        for key, value in (field.split("=", 1) for field in fields.split()):
            assert files.get("%s/%s" % (device, key)) == value, (device, key)
    root = gpu_sysfs(capture)
    with open(os.path.join(root, recorded[0][0], "numa_node")) as handle:
        assert handle.read() == files[recorded[0][0] + "/numa_node"] + "\n"


def test_sysfs_list_rejects_paths_that_leave_the_root(tmp_path, sysfs_tree):
    (tmp_path / "sysfs.txt").write_text("../etc/passwd x\n")
    with pytest.raises(ValueError, match="relative path"):
        sysfs_tree.read_list(str(tmp_path))
