# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The comparison behind "run this step only when its inputs changed" (plugins/module_utils/install/inputs_record.py)."""

import json
import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.install import inputs_record as R


def make_tree(root):
    (root / "pkg").mkdir(parents=True)
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (root / "pkg" / "kernel.cu").write_text("__global__ void k() {}\n")
    return root


def test_differs_without_record_names_every_key():
    assert R.differs({"b": 1, "a": 2}, None) == ["a", "b"]


def test_differs_names_changed_and_new_keys_and_ignores_dropped_ones():
    recorded = {"arch_list": "12.0", "torch": "2.14.1", "dropped": "x"}
    current = {"arch_list": "9.0", "torch": "2.14.1", "cuda": "13.0"}
    assert R.differs(current, recorded) == ["arch_list", "cuda"]
    assert R.differs({"torch": "2.14.1"}, recorded) == []


def test_normalize_compares_like_with_like():
    # What Ansible passes (tuples, nested dicts) against what json.load reads back.
    current = R.normalize({"env": {"B": "1"}, "extras": ("a", "b"), "no_deps": False})
    recorded = json.loads(R.render(current))
    assert R.differs(current, recorded) == []
    assert recorded["extras"] == ["a", "b"]


def test_render_is_stable():
    assert R.render({"b": 1, "a": {"d": 1, "c": 2}}) == R.render({"a": {"c": 2, "d": 1}, "b": 1})
    assert R.render({"a": 1}).endswith("}\n")


def test_read_record(tmp_path):
    assert R.read_record(str(tmp_path / "absent.json")) is None
    good = tmp_path / "good.json"
    good.write_text('{"a": 1}')
    assert R.read_record(str(good)) == {"a": 1}
    for text in ("[1, 2]", "not json"):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError):
            R.read_record(str(bad))


def test_explain():
    assert R.explain(None, ["a"]) == "no record of an earlier run: running"
    assert R.explain({"a": 1}, ["a", "b"]) == "inputs changed (a, b): running"
    assert R.explain({"a": 1}, []) == "inputs unchanged since the last run: skipped"


def test_tree_hash_ignores_build_outputs_and_vcs(tmp_path):
    src = make_tree(tmp_path / "src")
    before = R.tree_hash(str(src))
    assert len(before) == 64
    for junk in ("build/lib/x.so", "dist/x.whl", "x.egg-info/PKG-INFO", ".git/HEAD", "pkg/__pycache__/a.pyc"):
        path = src / junk
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("output")
    assert R.tree_hash(str(src)) == before


def test_tree_hash_follows_content_names_modes_and_links(tmp_path):
    src = make_tree(tmp_path / "src")
    base = R.tree_hash(str(src))
    (src / "pkg" / "kernel.cu").write_text("__global__ void k() { /* changed */ }\n")
    changed = R.tree_hash(str(src))
    assert changed != base
    os.chmod(str(src / "setup.py"), 0o755)
    assert R.tree_hash(str(src)) != changed
    os.chmod(str(src / "setup.py"), 0o644)
    assert R.tree_hash(str(src)) == changed
    (src / "pkg" / "kernel.cu").rename(src / "pkg" / "other.cu")
    renamed = R.tree_hash(str(src))
    assert renamed != changed
    os.symlink("other.cu", str(src / "pkg" / "link.cu"))
    assert R.tree_hash(str(src)) != renamed
