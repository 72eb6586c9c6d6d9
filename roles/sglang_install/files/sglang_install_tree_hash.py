#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Print the SHA-256 of a source tree (paths, modes and contents), leaving out VCS data and build
outputs, so a kernel build from a directory is redone exactly when its sources change."""
import hashlib
import os
import sys

SKIP_DIRS = {".git", ".hg", ".svn", "build", "dist", "__pycache__", ".eggs"}


def tree_hash(root):
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                digest.update(("L %s %s\n" % (rel, os.readlink(path))).encode())
                continue
            mode = os.stat(path).st_mode & 0o111
            digest.update(("F %s %o\n" % (rel, mode)).encode())
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: sglang_install_tree_hash.py DIRECTORY")
    print(tree_hash(sys.argv[1]))
