# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The model download (files/sglang_install_hf_download.py and tasks/model.yml): pinned to the commit the hub
resolves, that commit recorded, the token from a 0600 file and never in a command line or an environment. The hub is
a stand-in huggingface_hub module here: nothing is contacted."""

import json
import os
import pathlib
import re
import subprocess
import sys

import yaml

ROLE = pathlib.Path(__file__).resolve().parents[4] / "roles" / "sglang_install"
SCRIPT = ROLE / "files" / "sglang_install_hf_download.py"
COMMIT = "0123456789abcdef0123456789abcdef01234567"

# A stand-in huggingface_hub: model_info resolves any revision to COMMIT, snapshot_download returns the cache's
# snapshot path (named after the commit, as the real one does without local_dir) and both log what they got.
FAKE_HUB = '''
import json, os
LOG = os.environ["FAKE_HUB_LOG"]
def _log(**kw):
    with open(LOG, "a") as handle:
        handle.write(json.dumps(kw) + "\\n")
class _Info:
    sha = %(commit)r
class HfApi:
    def model_info(self, repo_id, revision=None, token=None):
        _log(call="model_info", repo_id=repo_id, revision=revision, token=token)
        return _Info()
def snapshot_download(repo_id, revision=None, local_dir=None, token=None):
    _log(call="snapshot_download", repo_id=repo_id, revision=revision, local_dir=local_dir, token=token)
    return os.path.join(os.environ["FAKE_HUB_CACHE"], "snapshots", os.environ.get("FAKE_HUB_RETURNS", revision))
''' % {"commit": COMMIT}


def _run(tmp_path, *extra, returns=None):
    hub = tmp_path / "hub"
    hub.mkdir(exist_ok=True)
    (hub / "huggingface_hub.py").write_text(FAKE_HUB)
    env = dict(os.environ, PYTHONPATH=str(hub), FAKE_HUB_LOG=str(tmp_path / "calls.log"),
               FAKE_HUB_CACHE=str(tmp_path / "cache"), HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_OFFLINE="1")
    env.pop("HF_TOKEN", None)
    if returns:
        env["FAKE_HUB_RETURNS"] = returns
    argv = [sys.executable, str(SCRIPT), "org/model", "main", str(tmp_path / "model"), "--result",
            str(tmp_path / "result.json")] + list(extra)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    calls = [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()] \
        if (tmp_path / "calls.log").exists() else []
    return proc, calls, argv


def test_the_download_is_pinned_to_the_resolved_commit_and_records_it(tmp_path):
    token = tmp_path / "token"
    token.write_text("hf_s3cret\n")
    token.chmod(0o600)
    proc, calls, argv = _run(tmp_path, "--token-file", str(token))
    assert proc.returncode == 0, proc.stderr
    assert [c["call"] for c in calls] == ["model_info", "snapshot_download"]
    assert calls[0]["revision"] == "main" and calls[1]["revision"] == COMMIT
    assert all(c["token"] == "hf_s3cret" for c in calls)
    assert json.loads((tmp_path / "result.json").read_text()) == {"repo_id": "org/model", "revision": "main",
                                                                  "commit": COMMIT}
    assert "commit %s" % COMMIT in proc.stdout
    assert "hf_s3cret" not in " ".join(argv) + proc.stdout + proc.stderr


def test_without_a_token_file_no_token_is_sent(tmp_path):
    proc, calls, dummy = _run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [c["token"] for c in calls] == [None, None]


def test_a_snapshot_of_another_commit_fails(tmp_path):
    proc, dummy, dummy2 = _run(tmp_path, returns="f" * 40)
    assert proc.returncode != 0 and "not the resolved %s" % COMMIT in proc.stderr
    assert not (tmp_path / "result.json").exists()


def _tasks(items):
    for task in items:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key) or [])


def test_model_yml_passes_no_token_through_an_environment():
    tasks = list(_tasks(yaml.safe_load((ROLE / "tasks" / "model.yml").read_text())))
    for task in tasks:
        assert "environment" not in task, task["name"]
        job = (task.get("vars") or {}).get("__sglang_install_job")
        if job:
            assert "hf_token" not in job["environment"] and "HF_TOKEN" not in job["environment"], task["name"]
            # The command names the token file, and asks only whether a token is set: never its value.
            assert not re.search(r"(?<!_)sglang_install_hf_token(?!_file| [|] length)", job["command"]), task["name"]
    writes = [t for t in tasks if "sglang_install_hf_token" in str((t.get("ansible.builtin.copy") or {}).get("content"))]
    (write,) = writes
    assert write["no_log"] is True and write["ansible.builtin.copy"]["mode"] == "0600"
    removes = [t for t in tasks if (t.get("ansible.builtin.file") or {}).get("state") == "absent"]
    assert [t["ansible.builtin.file"]["path"] for t in removes] == [write["ansible.builtin.copy"]["dest"]]


def test_the_downloaded_tree_is_writable_by_its_owner_only(tmp_path):
    """huggingface_hub leaves its lock files writable by everyone: the script takes group and other write (and set-ID
    bits) off every entry of the model tree, links untouched."""
    hub = tmp_path / "hub"
    hub.mkdir()
    (hub / "huggingface_hub.py").write_text("HfApi = snapshot_download = None\n")
    sys.path[:0] = [str(hub), str(SCRIPT.parent)]
    try:
        import sglang_install_hf_download as download  # pylint: disable=import-outside-toplevel
    finally:
        del sys.path[:2]
        sys.modules.pop("huggingface_hub", None)
    tree = tmp_path / "model"
    lock_dir = tree / ".cache" / "huggingface" / "download"
    lock_dir.mkdir(parents=True)
    lock = lock_dir / "config.json.lock"
    lock.write_text("")
    lock.chmod(0o666)
    weights = tree / "weights.safetensors"
    weights.write_text("w")
    weights.chmod(0o4775)
    (tree / "link").symlink_to("/etc/hostname")
    lock_dir.chmod(0o777)
    assert download.readable_only(str(tree)) == 3
    assert oct(lock.stat().st_mode & 0o7777) == "0o644"
    assert oct(weights.stat().st_mode & 0o7777) == "0o755"
    assert oct(lock_dir.stat().st_mode & 0o7777) == "0o755"
    assert download.readable_only(str(tree)) == 0
