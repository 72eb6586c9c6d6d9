# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/platform/fake_hf_hub.py: a gated repository on loopback that answers like the hub's API to the requests
huggingface_hub 1.x makes (the download itself, with the real huggingface_hub, runs in the sglang_install scenario)."""
import http.server
import json
import os
import sys
import threading
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "platform"))

import fake_hf_hub  # noqa: E402  pylint: disable=wrong-import-position

TOKEN = "hf_test_token_value"


@pytest.fixture()
def hub(tmp_path):
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "tiny"}', encoding="utf-8")
    (model / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 500)
    log = tmp_path / "hub.log"
    repository = fake_hf_hub.Repository("org/tiny", str(model))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), fake_hf_hub.handler_for(repository, TOKEN, str(log)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % server.server_address[1], repository, log
    server.shutdown()


def _get(url, token=TOKEN, method="GET"):
    request = urllib.request.Request(url, method=method, headers={"Authorization": "Bearer " + token} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # nosec: loopback only
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_the_revision_resolves_to_a_stable_commit_with_the_files(hub):
    url, repository, _log = hub
    status, _headers, body = _get(url + "/api/models/org/tiny/revision/main")
    info = json.loads(body)
    assert status == 200 and info["sha"] == repository.commit and len(repository.commit) == 40
    assert [s["rfilename"] for s in info["siblings"]] == ["config.json", "sub/weights.bin"]
    assert fake_hf_hub.Repository("org/tiny", repository.directory).commit == repository.commit


def test_tree_and_resolve_carry_what_the_client_reads(hub):
    url, repository, _log = hub
    status, _headers, body = _get(url + "/api/models/org/tiny/tree/%s?recursive=true&expand=false" % repository.commit)
    assert status == 200
    assert [(e["type"], e["path"], e["size"]) for e in json.loads(body)] == [
        ("file", "config.json", 22), ("file", "sub/weights.bin", 1000)]
    status, headers, body = _get(url + "/org/tiny/resolve/%s/sub/weights.bin" % repository.commit, method="HEAD")
    assert status == 200 and body == b"" and headers["X-Repo-Commit"] == repository.commit
    assert headers["Content-Length"] == "1000" and headers["ETag"].startswith('"')
    assert _get(url + "/org/tiny/resolve/main/sub/weights.bin")[2] == b"\x00\x01" * 500


def test_gated_without_the_token_and_404_elsewhere(hub):
    url, repository, log = hub
    assert _get(url + "/api/models/org/tiny/revision/main", token=None)[0] == 401
    assert _get(url + "/api/models/org/tiny/revision/main", token="hf_wrong")[0] == 401
    assert _get(url + "/api/models/org/other/revision/main")[0] == 404
    assert _get(url + "/api/models/org/tiny/revision/v2")[0] == 404
    assert _get(url + "/org/tiny/resolve/%s/missing.bin" % repository.commit)[0] == 404
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    expected = [(401, False), (401, False), (404, True), (404, True), (404, True)]
    assert [(e["status"], e["authorized"]) for e in entries] == expected
    assert TOKEN not in log.read_text(encoding="utf-8")
