#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Download a Hugging Face model repository at a revision into a directory (resumable), pinned to the commit the hub
resolves the revision to. Run with the SGLang venv's Python (huggingface_hub is an SGLang dependency). The role
records the download (inputs_record), with that commit, once this exits 0; a failed or interrupted download resumes on
the next run.

The token is read from a file (--token-file, mode 0600, written by the role and removed after the run), never from
the command line or the environment. The commit is written as JSON ({"repo_id", "revision", "commit"}) to --result.

Usage: sglang_install_hf_download.py REPO_ID REVISION LOCAL_DIR [--token-file PATH] [--result PATH]
"""
import argparse
import json
import os
import re
import stat
import sys
import time
from typing import Optional

from huggingface_hub import HfApi, snapshot_download

COMMIT = re.compile(r"^[0-9a-f]{40}$")


def read_token(path: Optional[str]) -> Optional[str]:
    if not path:
        return None
    with open(path) as handle:
        return handle.read().strip() or None


def snapshot_commit(path: str, resolved: str) -> str:
    """The commit of a download: the snapshot directory's name when the hub returned one (``.../snapshots/<sha>``),
    else the commit the revision resolved to."""
    name = os.path.basename(os.path.normpath(str(path)))
    return name if COMMIT.match(name) else resolved


def readable_only(local_dir: str) -> int:
    """Take group and other write and the set-ID and sticky bits off every directory and file of this user under
    local_dir (links are left alone): the servers read the tree and none may write it. huggingface_hub's lock files
    (under .cache/huggingface/download/) are made writable by everyone whatever the umask. Returns how many entries
    changed."""
    changed = 0
    uid = os.geteuid()
    for root, dirs, files in os.walk(local_dir, followlinks=False):
        for name in [""] + dirs + files:
            path = os.path.join(root, name) if name else root
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode) or info.st_uid != uid:
                continue
            mode = stat.S_IMODE(info.st_mode)
            if mode & 0o7022:
                os.chmod(path, mode & ~0o7022)
                changed += 1
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("repo_id")
    parser.add_argument("revision")
    parser.add_argument("local_dir")
    parser.add_argument("--token-file", help="a file holding the Hugging Face token")
    parser.add_argument("--result", help="write the resolved commit here (JSON)")
    args = parser.parse_args(argv)
    token = read_token(args.token_file)
    start = time.time()
    # Resolve a branch or tag to its commit first and download exactly that commit: what is on disk is one commit,
    # even if the branch moves during the download.
    resolved = HfApi().model_info(args.repo_id, revision=args.revision, token=token).sha
    print("downloading %s at %s (commit %s) into %s" % (args.repo_id, args.revision, resolved, args.local_dir), flush=True)
    # Files already complete in local_dir are kept; interrupted ones resume.
    path = snapshot_download(repo_id=args.repo_id, revision=resolved, local_dir=args.local_dir, token=token)
    readable_only(args.local_dir)
    commit = snapshot_commit(path, resolved)
    if commit != resolved:
        sys.exit("the hub returned commit %s for %s, not the resolved %s" % (commit, args.revision, resolved))
    if args.result:
        with open(args.result, "w") as handle:
            json.dump({"repo_id": args.repo_id, "revision": args.revision, "commit": commit}, handle, sort_keys=True)
            handle.write("\n")
    print("complete in %d s: commit %s" % (time.time() - start, commit), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
