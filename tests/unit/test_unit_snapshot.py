# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every unit and env file rendered for the example inventories equals the committed snapshot.

The snapshot was taken before the second reshape: a refactoring that changes what a host runs shows up
here. A deliberate change is made by regenerating it (PDSERVE_UPDATE_SNAPSHOT=1) and saying why in the commit.
"""

import filecmp
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "unit" / "snapshot"
INVENTORIES = ["blackwell", "local", "multinode", "multinode_tp"]


def _render(inventory, dest):
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    env["ANSIBLE_NOCOLOR"] = "1"
    cmd = [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(SNAPSHOTS / "render_units.yml"),
           "-i", str(ROOT / "inventories" / inventory), "-e", "snapshot_dir=%s" % dest,
           # Fixed stand-ins for the inventories' password lookups (which would make random keys in inventories/).
           "-e", "sglang_router_api_key=snapshot-client-key", "-e", "sglang_router_control_plane_api_key=snapshot-admin-key"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout


def _tree(base):
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_rendered_units_match_the_snapshot(inventory, tmp_path):
    _render(inventory, tmp_path)
    expected = SNAPSHOTS / inventory
    if os.environ.get("PDSERVE_UPDATE_SNAPSHOT") == "1":
        shutil.rmtree(expected, ignore_errors=True)
        shutil.copytree(tmp_path, expected)
    assert _tree(tmp_path), "the render playbook wrote nothing"
    assert _tree(tmp_path) == _tree(expected)
    _match, mismatch, errors = filecmp.cmpfiles(expected, tmp_path, _tree(expected), shallow=False)
    assert not errors
    for name in mismatch:
        assert (tmp_path / name).read_text() == (expected / name).read_text(), name
