#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Download a Hugging Face model repository at a pinned revision into a directory (resumable), then
write MARKER with what was downloaded. Run with the SGLang venv's Python (huggingface_hub is an
SGLang dependency). The token comes from HF_TOKEN in the environment, never from the command line.

Usage: sglang_install_hf_download.py REPO_ID REVISION LOCAL_DIR MARKER
"""
import json
import os
import sys
import time

from huggingface_hub import HfApi, snapshot_download


def main():
    repo_id, revision, local_dir, marker = sys.argv[1:5]
    token = os.environ.get("HF_TOKEN") or None
    start = time.time()
    # Resolve a branch or tag to its commit first, so the marker names exactly what is on disk.
    commit = HfApi().model_info(repo_id, revision=revision, token=token).sha
    print("downloading %s at %s (commit %s) into %s" % (repo_id, revision, commit, local_dir), flush=True)
    # Files already complete in local_dir are kept; interrupted ones resume.
    snapshot_download(repo_id=repo_id, revision=commit, local_dir=local_dir, token=token)
    with open(marker + ".tmp", "w") as handle:
        json.dump({"repo_id": repo_id, "revision": revision, "commit": commit,
                   "seconds": round(time.time() - start)}, handle, indent=2)
    os.replace(marker + ".tmp", marker)
    print("complete in %d s" % (time.time() - start), flush=True)


if __name__ == "__main__":
    main()
