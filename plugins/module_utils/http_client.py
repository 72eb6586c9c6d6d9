# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Small HTTP/JSON/SSE client on the Python standard library.

Modules run on the serving hosts, which have no ``requests``. Every call returns an
``HttpResult`` instead of raising: HTTP error statuses and connection failures are data
(``status`` is ``None`` and ``error`` says why when nothing answered), because the callers
report "what the endpoint last answered" rather than a traceback.

A router served over TLS (sglang_router_tls) is verified against the CA file given as ``ca_path`` (the stack's CA
or the operator's), instead of the system's trust store, which knows neither.

Proxy environment variables are ignored on purpose: the endpoints are the serving hosts
themselves (usually loopback or a private network), and a proxy in between would make the
readiness and parser checks test the proxy.
"""

import json
import socket
import ssl
import time
from typing import Any, Dict, List, Optional, Union

from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.request import HTTPSHandler, ProxyHandler, Request, build_opener

USER_AGENT = 'pdserve.sglang'
EXCERPT_CHARS = 300


def excerpt(text: Union[str, bytes, None], limit: int = EXCERPT_CHARS) -> str:
    """One-line excerpt of a text, for messages."""
    if text is None:
        return ''
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    text = ' '.join(str(text).split())
    if len(text) > limit:
        return text[:limit] + '...'
    return text


def join_url(base: str, path: str) -> str:
    """Join a base URL (with or without a trailing slash) and an absolute path."""
    return base.rstrip('/') + '/' + path.lstrip('/')


class CaFileError(ValueError):
    """The CA file to verify against cannot be used (missing, unreadable, no certificate in it)."""


def tls_context(ca_path: Optional[str] = None, validate_certs: bool = True) -> Optional[ssl.SSLContext]:
    """The context for https:// endpoints: verifying against ``ca_path`` when given, not verifying at all with
    ``validate_certs`` false, and None (Python's default: the system's trust store) otherwise."""
    if not validate_certs:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if not ca_path:
        return None
    try:
        return ssl.create_default_context(cafile=ca_path)
    except (OSError, ssl.SSLError) as exc:
        raise CaFileError('cannot use the CA file %s to verify the router\'s certificate (%s): it is the CA certificate '
                          'the router\'s certificate was issued by (PEM); the router role puts it there '
                          '(sglang_router_tls_ca_path)' % (ca_path, getattr(exc, 'strerror', None) or exc))


def describe_exception(exc: BaseException) -> str:
    """Short human description of a connection-level failure."""
    reason = getattr(exc, 'reason', exc)
    if isinstance(reason, ssl.SSLCertVerificationError):
        return ('TLS certificate not trusted (%s): verify against the CA that issued it (ca_path, the router\'s '
                'sglang_router_tls_ca_path)' % (reason.verify_message or reason))
    if isinstance(reason, ssl.SSLError):
        return 'TLS failed: %s' % (reason.reason or reason)
    if isinstance(reason, (socket.timeout,)) or 'timed out' in str(reason):
        return 'timed out'
    if isinstance(reason, ConnectionRefusedError):
        return 'connection refused'
    if isinstance(reason, ConnectionResetError):
        return 'connection reset'
    if isinstance(reason, socket.gaierror):
        return 'name resolution failed: %s' % reason
    text = str(reason)
    if 'Connection refused' in text:
        return 'connection refused'
    return '%s: %s' % (type(reason).__name__, text) if text else type(reason).__name__


class HttpResult(object):
    """What an endpoint answered (or why nothing answered)."""

    def __init__(self, method, url, status=None, headers=None, body=b'', error=None, seconds=0.0):
        self.method = method
        self.url = url
        self.status = status
        self.headers = dict((k.lower(), v) for k, v in (headers or {}).items())
        self.body = body or b''
        self.error = error
        self.seconds = seconds

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode('utf-8', 'replace')

    def json(self) -> Any:
        """Decoded JSON body, or None when the body is not JSON."""
        try:
            return json.loads(self.text)
        except ValueError:
            return None

    def summary(self, path: Optional[str] = None) -> str:
        """'GET /health -> 503 body...' or 'GET /health -> connection refused'."""
        where = path or self.url
        if self.status is None:
            return '%s %s -> %s' % (self.method, where, self.error)
        body = excerpt(self.text, 160)
        return '%s %s -> %s%s' % (self.method, where, self.status, (' ' + body) if body else '')


class HttpClient(object):
    """JSON over HTTP with an optional bearer token and a per-request timeout.

    ``ca_path``: the CA file https:// endpoints are verified against (raises CaFileError when it cannot be read).
    """

    def __init__(self, api_key=None, timeout=30.0, validate_certs=True, headers=None, control_plane_api_key=None,
                 ca_path=None):
        self.api_key = api_key
        # The router's worker-management key: sent instead of api_key on control-plane requests (/workers).
        self.control_plane_api_key = control_plane_api_key
        self.timeout = float(timeout)
        self.headers = dict(headers or {})
        self.ca_path = ca_path
        handlers = [ProxyHandler({})]
        context = tls_context(ca_path, validate_certs)
        if context is not None:
            handlers.append(HTTPSHandler(context=context))
        self._opener = build_opener(*handlers)

    def _request(self, method, url, payload=None, headers=None, stream=False, control_plane=False):
        data = None
        all_headers = {'User-Agent': USER_AGENT, 'Accept': 'application/json'}
        if payload is not None:
            data = json.dumps(payload).encode('utf-8')
            all_headers['Content-Type'] = 'application/json'
        if stream:
            all_headers['Accept'] = 'text/event-stream'
        key = self.control_plane_api_key if control_plane and self.control_plane_api_key else self.api_key
        if key:
            all_headers['Authorization'] = 'Bearer %s' % key
        all_headers.update(self.headers)
        all_headers.update(headers or {})
        return Request(url, data=data, headers=all_headers, method=method)

    def request(self, method: str, url: str, payload: Any = None, headers: Optional[Dict[str, str]] = None,
                timeout: Optional[float] = None, control_plane: bool = False) -> "HttpResult":
        """Send one request and read the whole body (``control_plane``: with the control-plane key, when set)."""
        started = time.monotonic()
        timeout = self.timeout if timeout is None else timeout
        try:
            # Inside the try: a URL urllib cannot parse is a result with its error, like any other failure.
            req = self._request(method, url, payload, headers, control_plane=control_plane)
            resp = self._opener.open(req, timeout=timeout)
            try:
                body = resp.read()
                return HttpResult(method, url, resp.status, dict(resp.headers.items()), body,
                                  seconds=time.monotonic() - started)
            finally:
                resp.close()
        except HTTPError as exc:
            try:
                body = exc.read()
            except Exception:  # pylint: disable=broad-except
                body = b''
            return HttpResult(method, url, exc.code, dict(exc.headers.items()) if exc.headers else {},
                              body, seconds=time.monotonic() - started)
        except (URLError, HTTPException, OSError, ValueError) as exc:
            return HttpResult(method, url, None, error=describe_exception(exc),
                              seconds=time.monotonic() - started)

    def get(self, url: str, timeout: Optional[float] = None, control_plane: bool = False) -> "HttpResult":
        return self.request('GET', url, timeout=timeout, control_plane=control_plane)

    def post_json(self, url: str, payload: Any, timeout: Optional[float] = None, control_plane: bool = False) -> "HttpResult":
        return self.request('POST', url, payload=payload, timeout=timeout, control_plane=control_plane)

    def stream_sse(self, url: str, payload: Any, timeout: Optional[float] = None) -> "SseResult":
        """POST and read a server-sent event stream.

        Returns an ``SseResult``: the ``data:`` payloads in order (JSON-decoded where they
        are JSON), whether ``[DONE]`` arrived, and the status/headers. A non-2xx answer is
        read as a plain body.
        """
        started = time.monotonic()
        timeout = self.timeout if timeout is None else timeout
        result = SseResult('POST', url)
        try:
            req = self._request('POST', url, payload, stream=True)
            resp = self._opener.open(req, timeout=timeout)
        except HTTPError as exc:
            try:
                body = exc.read()
            except Exception:  # pylint: disable=broad-except
                body = b''
            result.status = exc.code
            result.headers = dict((k.lower(), v) for k, v in (exc.headers.items() if exc.headers else []))
            result.body = body
            result.seconds = time.monotonic() - started
            return result
        except (URLError, HTTPException, OSError, ValueError) as exc:
            result.error = describe_exception(exc)
            result.seconds = time.monotonic() - started
            return result
        result.status = resp.status
        result.headers = dict((k.lower(), v) for k, v in resp.headers.items())
        try:
            data_lines: List[str] = []
            while True:
                raw = resp.readline()
                if not raw:
                    break
                line = raw.decode('utf-8', 'replace').rstrip('\r\n')
                if line == '':
                    if data_lines:
                        result.add_event('\n'.join(data_lines))
                        data_lines = []
                    continue
                if line.startswith(':'):
                    continue
                if line.startswith('data:'):
                    data_lines.append(line[5:].lstrip(' ') if line[5:6] == ' ' else line[5:])
                # other fields (event:, id:, retry:) carry nothing the checks need
            if data_lines:
                result.add_event('\n'.join(data_lines))
        except (HTTPException, OSError, ValueError) as exc:
            result.error = 'stream broken: %s' % describe_exception(exc)
        finally:
            resp.close()
        result.seconds = time.monotonic() - started
        return result


class SseResult(HttpResult):
    """An event stream: decoded events plus whether the [DONE] sentinel was seen."""

    def __init__(self, method, url):
        super(SseResult, self).__init__(method, url)
        self.events = []
        self.raw_events = []
        self.done = False

    def add_event(self, data: str) -> None:
        self.raw_events.append(data)
        if data.strip() == '[DONE]':
            self.done = True
            return
        try:
            self.events.append(json.loads(data))
        except ValueError:
            self.events.append({'_unparsed': data})
