# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which values of the collection's settings are secrets, judged by the name they are set under: what ``--diff``
masks (managed_files' ``secret_values``, which also hides them from every result).

An environment variable is a secret when its name holds TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL (HF_TOKEN,
WANDB_API_KEY, ...), unless the name ends in _FILE, _PATH or _DIR (where the secret is, not the secret). In nested
settings (Alertmanager receivers, Prometheus scrape configurations) the same goes for keys, plus the URLs that carry a
token: ``api_url``, ``webhook_url``, a webhook's ``url``, and any URL with a password in it.
"""

import re
from typing import Any, Iterable, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.units import env_quote

_SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
_WHERE = re.compile(r"(_FILE|_PATH|_DIR)$", re.I)
_URL_SECRET = re.compile(r"^(api_url|webhook_url|[a-z_]*_api_url)$", re.I)
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@", re.I)
# A reference to another variable, not a value.
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
# Switches are left alone: masking "1" or "true" would mask every such text of the file, and hide nothing.
_SWITCH = frozenset(["0", "1", "true", "false", "yes", "no", "on", "off"])


def looks_secret(name: Any) -> bool:
    """Whether a variable or key of this name holds a secret."""
    text = str(name)
    return bool(_SECRET.search(text)) and not _WHERE.search(text)


def _forms(value: Any) -> List[str]:
    """The value as given and as an env file writes it (quotes and backslashes escaped)."""
    text = "" if value is None else str(value)
    if not text or text.lower() in _SWITCH or _REFERENCE.match(text):
        return []
    quoted = env_quote(text)[1:-1]
    return [text] if quoted == text else [text, quoted]


def env_secret_values(envs: Iterable[Optional[dict]]) -> List[str]:
    """The values of the secret-looking variables of some env dicts (each: name -> value), without repeats."""
    found = []  # type: List[str]
    for env in envs or []:
        for name, value in sorted((env or {}).items()):
            if looks_secret(name) and not isinstance(value, (dict, list)):
                found.extend(v for v in _forms(value) if v not in found)
    return found


def env_without_secrets(env: Optional[dict]) -> dict:
    """The env dict without its secret-looking variables (for a check that needs the others, such as SGLANG_*)."""
    return dict((k, v) for k, v in (env or {}).items() if not looks_secret(k))


def nested_secret_values(value: Any) -> List[str]:
    """The secrets in a nested setting (dicts and lists): the string values under secret-looking keys, the URLs that
    carry a token, and URLs with a password."""
    found = []  # type: List[str]

    def add(text):
        for form in _forms(text):
            if form not in found:
                found.append(form)

    def walk(item, key=None, parent=None):
        if isinstance(item, dict):
            for name, sub in item.items():
                walk(sub, str(name), key)
        elif isinstance(item, (list, tuple)):
            for sub in item:
                walk(sub, key, parent)
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool) and key is not None:
            text = str(item)
            if (looks_secret(key) or _URL_SECRET.match(key) or (key == "url" and (parent or "").startswith("webhook"))
                    or _URL_WITH_PASSWORD.match(text)):
                add(text)

    walk(value)
    return found
