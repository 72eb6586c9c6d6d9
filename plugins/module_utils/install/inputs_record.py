# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run a step only when its inputs changed: compare a dict of inputs with the JSON record that was
written after the step last succeeded (module inputs_record).

A step (a kernel build, a source install, a model download) records its inputs after it succeeded;
the next run compares and skips the step when nothing differs. A failed step writes no record, so the
next run tries again. Keys the record has and the inputs do not are ignored: dropping an input never
forces a rerun.
"""

import hashlib
import json
import os
from typing import Any, Dict, List, Optional

# Not part of a source tree's identity: VCS data and what a build writes into the tree.
SKIP_DIRS = frozenset([".git", ".hg", ".svn", "build", "dist", "__pycache__", ".eggs"])


def normalize(value: Any) -> Any:
    """The value as the record will hold it (JSON types), so a comparison is of like with like."""
    return json.loads(json.dumps(value, sort_keys=True))


def differs(current: Dict[str, Any], recorded: Optional[Dict[str, Any]]) -> List[str]:
    """Keys of ``current`` whose value is not the recorded one (all of them without a record), sorted."""
    if recorded is None:
        return sorted(current)
    return sorted(key for key in current if key not in recorded or recorded[key] != current[key])


def tree_hash(root: str) -> str:
    """SHA-256 of a source tree: relative paths, executable bits, symlink targets and contents.

    Build outputs and VCS data are left out, so building in the tree does not change its hash.
    """
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                digest.update(("L %s %s\n" % (rel, os.readlink(path))).encode("utf-8"))
                continue
            mode = os.stat(path).st_mode & 0o111
            digest.update(("F %s %o\n" % (rel, mode)).encode("utf-8"))
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def read_record(path: str) -> Optional[Dict[str, Any]]:
    """The recorded inputs, None when there is no record; ValueError for a record that is not a JSON object."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except (IOError, OSError):
        return None
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("%s does not hold a JSON object" % path)
    return data


def render(inputs: Dict[str, Any]) -> str:
    """The record's text: stable (sorted keys) so an unchanged record is byte-for-byte the same."""
    return json.dumps(inputs, indent=2, sort_keys=True) + "\n"


def explain(recorded: Optional[Dict[str, Any]], keys: List[str]) -> str:
    """One line for the task output: why the step runs or why it is skipped."""
    if recorded is None:
        return "no record of an earlier run: running"
    if keys:
        return "inputs changed (%s): running" % ", ".join(keys)
    return "inputs unchanged since the last run: skipped"
