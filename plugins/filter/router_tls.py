# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters for the router's TLS (module_utils/serving/tls.py): they run on the controller, where the stack's CA and the
operator's certificate files are."""

import importlib.util

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import tls


def router_tls_names(router, extra_names=None):
    """The subject alternative names of a router's certificate: its topology tls_names, then ``extra_names``."""
    if not isinstance(router, dict) or "tls_names" not in router:
        raise AnsibleFilterError("router_tls_names: pass a router of the serving topology (hosts[HOST].router)")
    return tls.subject_alt_names(router["tls_names"], extra_names if isinstance(extra_names, (list, tuple)) else [])


def _has_crypto_collection():
    """Whether the controller finds community.crypto (the stack's CA is made with it)."""
    try:
        return importlib.util.find_spec("ansible_collections.community.crypto.plugins.modules.x509_certificate") is not None
    except (ImportError, ValueError):
        return False


def router_tls_problems(router, host, files=None, extra_names=None):
    """The TLS problems of a router host found on the controller, as {host, variable, message, fix}."""
    needs_collection = isinstance(router, dict) and router.get("tls") == "stack_ca"
    return tls.router_tls_problems(host, router, dict(files or {}), [] if extra_names is None else extra_names,
                                   has_crypto_collection=_has_crypto_collection() if needs_collection else True)


class FilterModule(object):
    """pdserve.sglang filters of the router's TLS."""

    def filters(self):
        return {"router_tls_names": router_tls_names, "router_tls_problems": router_tls_problems}
