# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/platform/stand_index.py: a directory of wheels as a PEP 503 index on loopback, and a held request."""

import hashlib
import os
import re
import socket
import sys
import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "platform"))

import stand_index  # noqa: E402  pylint: disable=wrong-import-position


@pytest.mark.parametrize("filename, project", [
    ("fastapi-0.165.0-py3-none-any.whl", "fastapi"), ("Huggingface_Hub-1.33.0-py3-none-any.whl", "huggingface-hub"),
    ("zope.interface-7.0.tar.gz", "zope-interface"), ("my_pkg-1.0.zip", "my-pkg")])
def test_project_of(filename, project):
    assert stand_index.project_of(filename) == project


@pytest.fixture(name="index")
def fixture_index(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "fastapi-0.165.0-py3-none-any.whl").write_bytes(b"fastapi wheel")
    (wheels / "sglang-90.0.5-py3-none-any.whl").write_bytes(b"sglang wheel")
    (wheels / "notes.txt").write_text("not a wheel")
    log_path = tmp_path / "index.log"
    log = open(log_path, "a")  # pylint: disable=consider-using-with
    server = ThreadingHTTPServer(("127.0.0.1", 0), stand_index.make_handler(str(wheels), re.compile("^/files/sglang-"), log))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], log_path
    server.shutdown()
    server.server_close()
    log.close()


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.status, answer.read().decode()


def test_a_simple_index_of_the_directory(index):
    base, log_path = index
    status, page = get(base + "/simple/")
    assert status == 200 and 'href="/simple/fastapi/"' in page and 'href="/simple/sglang/"' in page and "notes" not in page
    digest = hashlib.sha256(b"fastapi wheel").hexdigest()
    status, page = get(base + "/simple/FastAPI")
    assert 'href="/files/fastapi-0.165.0-py3-none-any.whl#sha256=%s"' % digest in page
    assert get(base + "/files/fastapi-0.165.0-py3-none-any.whl") == (200, "fastapi wheel")
    with pytest.raises(urllib.error.HTTPError) as missing:
        get(base + "/simple/torch/")
    assert missing.value.code == 404
    lines = log_path.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == [
        "200 /simple/", "200 /simple/FastAPI", "200 /files/fastapi-0.165.0-py3-none-any.whl", "404 /simple/torch/"]


def test_a_held_request_gets_no_answer_and_is_logged(index):
    base, log_path = index
    with pytest.raises((socket.timeout, urllib.error.URLError)):
        get(base + "/files/sglang-90.0.5-py3-none-any.whl", timeout=1)
    assert log_path.read_text().splitlines()[-1].endswith(" hold /files/sglang-90.0.5-py3-none-any.whl")
    # The others are still answered meanwhile (one thread per request).
    assert get(base + "/simple/sglang/")[0] == 200
