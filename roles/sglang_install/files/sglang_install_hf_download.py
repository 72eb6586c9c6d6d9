#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Download a Hugging Face model repository at a revision into a directory (resumable). Run with the
SGLang venv's Python (huggingface_hub is an SGLang dependency). The token comes from HF_TOKEN in the
environment, never from the command line. The role records the download (inputs_record) once this
exits 0; a failed or interrupted download resumes on the next run.

Usage: sglang_install_hf_download.py REPO_ID REVISION LOCAL_DIR
"""
import os
import sys
import time

from huggingface_hub import HfApi, snapshot_download


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: sglang_install_hf_download.py REPO_ID REVISION LOCAL_DIR")
    repo_id, revision, local_dir = sys.argv[1:4]
    token = os.environ.get("HF_TOKEN") or None
    start = time.time()
    # Resolve a branch or tag to its commit first, so the log names exactly what is on disk.
    commit = HfApi().model_info(repo_id, revision=revision, token=token).sha
    print("downloading %s at %s (commit %s) into %s" % (repo_id, revision, commit, local_dir), flush=True)
    # Files already complete in local_dir are kept; interrupted ones resume.
    snapshot_download(repo_id=repo_id, revision=commit, local_dir=local_dir, token=token)
    print("complete in %d s" % (time.time() - start), flush=True)


if __name__ == "__main__":
    main()
