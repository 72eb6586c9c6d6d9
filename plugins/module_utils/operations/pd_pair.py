# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Send a chat request to one chosen prefill and one chosen decode server, the way the PD router does.

A router picks the pair itself, so a check through it cannot say which server answered. To validate one
server (the one just restarted or upgraded) with a peer of the other kind, this client plays the router for
that pair: the same body goes to both servers at once with ``bootstrap_host`` (the host of the prefill URL, as
the decode server must reach it), ``bootstrap_port`` (the prefill's) and a random ``bootstrap_room``; the answer
is the decode server's, after the prefill's has ended. It has the HttpClient interface ChatValidator uses.
"""

import random
import threading
from typing import Any, Dict, Optional

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    from urlparse import urlsplit  # type: ignore

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpResult, SseResult

CHAT_PATH = '/v1/chat/completions'


def bootstrap_host(prefill_url: str) -> Optional[str]:
    """The host part of the prefill URL (the router hands decode exactly this)."""
    return urlsplit(prefill_url).hostname


class PairClient(object):
    """``client``: an HttpClient. Requests to the decode URL's chat path go to both servers; others to decode."""

    def __init__(self, client, prefill_url, decode_url, bootstrap_port, rand=None):
        self.client = client
        self.prefill_url = prefill_url.rstrip('/')
        self.decode_url = decode_url.rstrip('/')
        self.bootstrap_port = int(bootstrap_port)
        self.rand = rand or random.SystemRandom()
        self.last_prefill = None

    @property
    def timeout(self) -> float:
        return self.client.timeout

    def body(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        body = dict(payload)
        body.update(bootstrap_host=bootstrap_host(self.prefill_url), bootstrap_port=self.bootstrap_port,
                    bootstrap_room=self.rand.getrandbits(63))
        return body

    def _pair(self, send, url, payload, timeout):
        if not url.rstrip('/').endswith(CHAT_PATH):
            return send(url, payload, timeout=timeout)
        body = self.body(payload)
        answers = {}

        def prefill():
            answers['prefill'] = send(self.prefill_url + CHAT_PATH, body, timeout=timeout)

        thread = threading.Thread(target=prefill, name='pd_pair:prefill')
        thread.daemon = True
        thread.start()
        decode = send(url, body, timeout=timeout)
        thread.join((timeout or self.client.timeout) + 5)
        self.last_prefill = answers.get('prefill')
        if self.last_prefill is not None and not self.last_prefill.ok and decode.ok:
            # The decode answer cannot be right when the prefill side failed: say so.
            decode.status = self.last_prefill.status or 502
            decode.body = self.last_prefill.body
            decode.error = 'prefill %s: %s' % (self.prefill_url, self.last_prefill.summary(CHAT_PATH))
        return decode

    def get(self, url: str, timeout: Optional[float] = None) -> HttpResult:
        return self.client.get(url, timeout=timeout)

    def request(self, method: str, url: str, payload: Any = None, headers: Optional[Dict[str, str]] = None,
                timeout: Optional[float] = None) -> HttpResult:
        return self.client.request(method, url, payload=payload, headers=headers, timeout=timeout)

    def post_json(self, url: str, payload: Any, timeout: Optional[float] = None) -> HttpResult:
        return self._pair(self.client.post_json, url, payload, timeout)

    def stream_sse(self, url: str, payload: Any, timeout: Optional[float] = None) -> SseResult:
        return self._pair(self.client.stream_sse, url, payload, timeout)
