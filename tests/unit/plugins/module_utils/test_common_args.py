# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options every HTTP module shares (module_utils/common_args.py) and the client made from them."""

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.pdserve.sglang.plugins.module_utils import common_args as CA
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient


def test_the_shared_options_and_their_defaults():
    spec = CA.http_argument_spec()
    assert spec == {"api_key": {"type": "str", "no_log": True},
                    "validate_certs": {"type": "bool", "default": True},
                    "request_timeout": {"type": "float", "default": 30.0}}
    # a fresh dict each call: a module that adds its options changes no other module's spec
    spec["extra"] = {}
    assert "extra" not in CA.http_argument_spec()


def test_ansible_validates_the_shared_options():
    result = ArgumentSpecValidator(CA.http_argument_spec()).validate({"api_key": "k", "request_timeout": "5"})
    assert result.error_messages == []
    assert result.validated_parameters == {"api_key": "k", "validate_certs": True, "request_timeout": 5.0}
    assert "k" in result._no_log_values  # pylint: disable=protected-access


def test_client_from_params():
    client = CA.client_from_params({"api_key": "k", "request_timeout": 5.0, "validate_certs": True})
    assert isinstance(client, HttpClient)
    assert (client.api_key, client.timeout) == ("k", 5.0)


def test_client_timeout_override_and_defaults():
    assert CA.client_from_params({"request_timeout": 5.0}, timeout=2).timeout == 2.0
    assert CA.client_from_params({"request_timeout": 5.0}, timeout=0).timeout == 0.0
    assert CA.client_from_params({}).timeout == 30.0
    assert CA.client_from_params({"request_timeout": None}).timeout == 30.0
    assert CA.client_from_params({}).api_key is None


def test_client_without_certificate_checks():
    # validate_certs=False installs an HTTPS handler that does not verify; the default keeps Python's own
    def https_contexts(client):
        return [h._context for h in client._opener.handlers  # pylint: disable=protected-access
                if type(h).__name__ == "HTTPSHandler" and getattr(h, "_context", None) is not None]

    unchecked = https_contexts(CA.client_from_params({"validate_certs": False}))
    assert unchecked and unchecked[0].check_hostname is False
    assert https_contexts(CA.client_from_params({"validate_certs": True})) == []


def test_the_router_modules_take_the_ca_file_of_a_tls_router(tmp_path):
    assert CA.router_argument_spec()["ca_path"] == {"type": "path"}
    assert "ca_path" not in CA.http_argument_spec()
    from tls_support import TestCA  # pylint: disable=import-error,import-outside-toplevel
    ca = TestCA(tmp_path)
    client = CA.client_from_params({"ca_path": ca.path})
    assert client.ca_path == ca.path
    contexts = [h._context for h in client._opener.handlers  # pylint: disable=protected-access
                if type(h).__name__ == "HTTPSHandler" and getattr(h, "_context", None) is not None]
    assert contexts and contexts[0].cert_store_stats()["x509_ca"] == 1


def test_a_ca_file_that_cannot_be_read_fails_the_module_naming_it(tmp_path):
    class Module(object):
        params = {"ca_path": str(tmp_path / "missing.pem")}

        def fail_json(self, msg):
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError) as failed:
        CA.module_client(Module())
    assert "missing.pem" in str(failed.value) and "sglang_router_tls_ca_path" in str(failed.value)
