# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The standard-library HTTP/JSON/SSE client (module_utils/http_client.py) against a real server on loopback:
answers, error statuses and connection failures are data, never exceptions."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils import http_client as H


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json", headers=None):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _record(self, body=None):
        self.server.calls.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                                  "body": body})

    def do_GET(self):  # noqa: N802
        self._record()
        if self.path == "/json":
            return self._send(200, {"ok": True}, headers={"X-Thing": "1"})
        if self.path == "/text":
            return self._send(200, b"plain words", "text/plain")
        if self.path == "/down":
            return self._send(503, b"  loading\n   the model  ", "text/plain")
        if self.path == "/slow":
            time.sleep(1.0)
            return self._send(200, {})
        if self.path == "/empty":
            return self._send(204, b"")
        return self._send(404, {"error": "not found"})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length).decode()) if length else None
        self._record(body)
        if self.path == "/echo":
            return self._send(200, {"got": body})
        if self.path == "/stream":
            events = (b": keep-alive\n\n"
                      b"data: {\"n\": 1}\n\n"
                      b"event: message\nid: 7\ndata:{\"n\": 2}\n\n"
                      b"data: {\"multi\":\ndata: \"line\"}\n\n"
                      b"data: not json\n\n"
                      b"data: [DONE]\n\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(events)))
            self.end_headers()
            self.wfile.write(events)
            return None
        if self.path == "/stream-no-blank-end":
            raw = b"data: {\"n\": 1}"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return None
        return self._send(400, {"error": "bad request"})


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the client of /slow gave up: a broken pipe here is the point of that test


@pytest.fixture(scope="module")
def server():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.calls = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = "http://127.0.0.1:%d" % httpd.server_address[1]
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_get_json(server):
    result = H.HttpClient(timeout=5).get(server.url + "/json")
    assert (result.method, result.url, result.status, result.ok, result.error) == ("GET", server.url + "/json", 200,
                                                                                   True, None)
    assert result.json() == {"ok": True}
    assert result.headers["x-thing"] == "1" and result.headers["content-type"] == "application/json"
    assert result.seconds >= 0


def test_a_body_that_is_not_json(server):
    result = H.HttpClient(timeout=5).get(server.url + "/text")
    assert result.ok and result.text == "plain words" and result.json() is None
    assert result.summary("/text") == "GET /text -> 200 plain words"


def test_an_error_status_is_data(server):
    result = H.HttpClient(timeout=5).get(server.url + "/down")
    assert (result.status, result.ok, result.error) == (503, False, None)
    assert result.summary() == "GET %s/down -> 503 loading the model" % server.url
    missing = H.HttpClient(timeout=5).get(server.url + "/nowhere")
    assert missing.status == 404 and missing.json() == {"error": "not found"}


def test_an_empty_answer(server):
    result = H.HttpClient(timeout=5).get(server.url + "/empty")
    assert result.status == 204 and result.ok and result.body == b"" and result.summary("/empty") == "GET /empty -> 204"


def test_post_json_sends_the_payload_and_headers(server):
    client = H.HttpClient(api_key="s3cret", timeout=5, headers={"X-Extra": "e"})
    result = client.post_json(server.url + "/echo", {"a": [1, 2]})
    assert result.ok and result.json() == {"got": {"a": [1, 2]}}
    call = server.calls[-1]
    assert call["headers"]["Authorization"] == "Bearer s3cret"
    assert call["headers"]["Content-Type"] == "application/json"
    assert call["headers"]["User-Agent"] == H.USER_AGENT and call["headers"]["X-Extra"] == "e"


def test_no_authorization_without_a_key(server):
    H.HttpClient(timeout=5).get(server.url + "/json")
    assert "Authorization" not in server.calls[-1]["headers"]


def test_request_headers_win(server):
    H.HttpClient(timeout=5, headers={"Accept": "x/one"}).request("GET", server.url + "/json", headers={"Accept": "x/two"})
    assert server.calls[-1]["headers"]["Accept"] == "x/two"


def test_connection_refused_is_data(closed_port):
    result = H.HttpClient(timeout=5).get("http://127.0.0.1:%d/health" % closed_port)
    assert (result.status, result.ok, result.error) == (None, False, "connection refused")
    assert result.summary("/health") == "GET /health -> connection refused"


def test_a_timeout_is_data(server):
    result = H.HttpClient(timeout=5).get(server.url + "/slow", timeout=0.2)
    assert result.status is None and result.error == "timed out"


def test_a_bad_url_is_data():
    result = H.HttpClient(timeout=1).get("not a url")
    assert result.status is None and result.error


def test_proxies_from_the_environment_are_ignored(server, monkeypatch, closed_port):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:%d" % closed_port)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:%d" % closed_port)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert H.HttpClient(timeout=5).get(server.url + "/json").ok


def test_stream_sse_reads_every_event(server):
    result = H.HttpClient(timeout=5).stream_sse(server.url + "/stream", {"stream": True})
    assert result.status == 200 and result.ok and result.error is None
    assert server.calls[-1]["headers"]["Accept"] == "text/event-stream"
    assert result.events == [{"n": 1}, {"n": 2}, {"multi": "line"}, {"_unparsed": "not json"}]
    assert result.raw_events[-1] == "[DONE]" and result.done is True
    assert result.headers["content-type"] == "text/event-stream"


def test_stream_sse_without_the_final_blank_line_or_done(server):
    result = H.HttpClient(timeout=5).stream_sse(server.url + "/stream-no-blank-end", {})
    assert result.events == [{"n": 1}] and result.done is False


def test_stream_sse_error_status_is_a_plain_body(server):
    result = H.HttpClient(timeout=5).stream_sse(server.url + "/nope", {})
    assert result.status == 400 and not result.ok and result.json() == {"error": "bad request"}
    assert result.events == [] and result.done is False


def test_stream_sse_connection_refused(closed_port):
    result = H.HttpClient(timeout=5).stream_sse("http://127.0.0.1:%d/v1/chat/completions" % closed_port, {})
    assert result.status is None and result.error == "connection refused" and result.events == []


def test_excerpt():
    assert H.excerpt(None) == ""
    assert H.excerpt(b"a\n  b\tc") == "a b c"
    assert H.excerpt("x" * 10, 4) == "xxxx..."
    assert H.excerpt(b"\xff ok") == "\ufffd ok"
    assert len(H.excerpt("y" * 1000)) == H.EXCERPT_CHARS + 3


def test_join_url():
    assert H.join_url("http://h:1", "/health") == "http://h:1/health"
    assert H.join_url("http://h:1/", "health") == "http://h:1/health"
    assert H.join_url("http://h:1/api/", "/v1/x") == "http://h:1/api/v1/x"


def test_describe_exception():
    assert H.describe_exception(socket.timeout("timed out")) == "timed out"
    assert H.describe_exception(ConnectionRefusedError()) == "connection refused"
    assert H.describe_exception(ConnectionResetError()) == "connection reset"
    assert H.describe_exception(socket.gaierror(-2, "Name or service not known")).startswith("name resolution failed: ")
    assert H.describe_exception(ValueError("unknown url type")) == "ValueError: unknown url type"
    assert H.describe_exception(OSError()) == "OSError"


def test_results_without_an_answer():
    result = H.HttpResult("GET", "http://h/x", headers={"X-A": "1"})
    assert not result.ok and result.text == "" and result.json() is None and result.headers == {"x-a": "1"}
    assert not H.HttpResult("GET", "u", status=302).ok and H.HttpResult("GET", "u", status=299).ok


# --- https: verified against the CA given as ca_path ------------------------------------------------------

@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """An HTTPS server on loopback with a certificate from a test CA, the CA, and another CA."""
    import ssl  # pylint: disable=import-outside-toplevel
    from tls_support import TestCA  # pylint: disable=import-error,import-outside-toplevel
    directory = tmp_path_factory.mktemp("tls")
    ca, other = TestCA(directory, "stack CA"), TestCA(directory, "other CA")
    cert, key = ca.issue(directory, "router", ["127.0.0.1", "localhost"])
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.calls = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = "https://127.0.0.1:%d" % httpd.server_address[1]
    yield {"server": httpd, "ca": ca.path, "other": other.path, "directory": directory}
    httpd.shutdown()
    httpd.server_close()


def test_https_with_the_ca_that_issued_the_certificate(tls):
    client = H.HttpClient(ca_path=tls["ca"], timeout=5)
    answer = client.get(tls["server"].url + "/json")
    assert (answer.status, answer.json()) == (200, {"ok": True})
    assert client.post_json(tls["server"].url + "/echo", {"a": 1}).json() == {"got": {"a": 1}}
    stream = client.stream_sse(tls["server"].url + "/stream", {})
    assert stream.status == 200 and stream.done


def test_https_by_name_is_verified_too(tls):
    url = tls["server"].url.replace("127.0.0.1", "localhost")
    assert H.HttpClient(ca_path=tls["ca"], timeout=5).get(url + "/json").status == 200


@pytest.mark.parametrize("which", [None, "other"])
def test_https_without_the_ca_or_with_another_is_refused(tls, which):
    client = H.HttpClient(ca_path=tls[which] if which else None, timeout=5)
    answer = client.get(tls["server"].url + "/json")
    assert answer.status is None and not answer.ok
    assert answer.error.startswith("TLS certificate not trusted") and "ca_path" in answer.error
    stream = client.stream_sse(tls["server"].url + "/stream", {})
    assert stream.status is None and stream.error.startswith("TLS certificate not trusted")


def test_validate_certs_false_skips_verification_whatever_the_ca(tls):
    assert H.HttpClient(ca_path=tls["other"], validate_certs=False, timeout=5).get(tls["server"].url + "/json").status == 200


@pytest.mark.parametrize("content", [None, b"not a certificate\n"])
def test_a_ca_file_that_cannot_be_used_is_an_error_naming_it(tls, content):
    path = tls["directory"] / ("bad-ca-%s.pem" % bool(content))
    if content:
        path.write_bytes(content)
    with pytest.raises(H.CaFileError) as caught:
        H.HttpClient(ca_path=str(path))
    assert str(path) in str(caught.value) and "sglang_router_tls_ca_path" in str(caught.value)


def test_plain_http_to_the_tls_port_gets_no_answer(tls):
    answer = H.HttpClient(timeout=5).get(tls["server"].url.replace("https://", "http://") + "/json")
    assert answer.status is None and answer.error
