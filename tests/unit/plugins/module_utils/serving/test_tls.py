# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The router's TLS judged on the controller (module_utils/serving/tls.py): the certificate's names, and the
operator's files (sglang_router_tls provided) against each other, with real certificates from a test CA."""

import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import tls as T
from tls_support import TestCA  # noqa: E402  pylint: disable=wrong-import-position,import-error

ROUTER = {"tls": "provided", "local_url": "https://127.0.0.1:30001", "tls_names": ["10.0.0.5", "r", "127.0.0.1", "localhost"]}


@pytest.fixture
def files(tmp_path):
    ca = TestCA(tmp_path, "stack CA")
    cert, key = ca.issue(tmp_path, "router", ["10.0.0.5", "127.0.0.1", "localhost"])
    return {"cert": cert, "key": key, "ca": ca.path, "_ca": ca, "_dir": tmp_path}


def judged(files, router=None):
    return [(p["variable"], p["message"]) for p in T.router_tls_problems("r", router or ROUTER, files)]


def test_subject_alt_names():
    assert T.subject_alt_names(["10.0.0.5", "Router-1", "::1", "[fd00::5]", "127.0.0.1", "localhost"], ["router-1"]) == [
        "IP:10.0.0.5", "DNS:router-1", "IP:::1", "IP:fd00::5", "IP:127.0.0.1", "DNS:localhost"]


def test_matching_files_pass(files):
    assert judged(files) == []


def test_tls_off_or_stack_ca_judges_no_file():
    assert T.router_tls_problems("r", dict(ROUTER, tls="none"), {}) == []
    assert T.router_tls_problems("r", None, {}) == []
    assert T.router_tls_problems("r", dict(ROUTER, tls="stack_ca"), {}) == []


@pytest.mark.parametrize("kind, variable", [("cert", "sglang_router_tls_cert_src"), ("key", "sglang_router_tls_key_src"),
                                            ("ca", "sglang_router_tls_ca_src")])
def test_a_missing_or_empty_file_names_its_variable(files, kind, variable):
    missing = dict(files, **{kind: str(files["_dir"] / "nope.pem")})
    (said,) = judged(missing)
    assert said[0] == variable and "cannot be read on the controller" in said[1] and "nope.pem" in said[1]
    (said,) = judged(dict(files, **{kind: ""}))
    assert said == (variable, "is empty, but sglang_router_tls is provided")


def test_an_unreadable_file_is_a_problem(files):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    os.chmod(files["key"], 0)
    assert judged(files)[0][0] == "sglang_router_tls_key_src"


def test_a_file_of_the_wrong_kind_is_named_without_its_content(files):
    swapped = dict(files, key=files["cert"], cert=files["key"])
    said = judged(swapped)
    assert [v for v, _m in said] == ["sglang_router_tls_cert_src", "sglang_router_tls_key_src"]
    with open(files["key"]) as handle:
        body = handle.read().splitlines()[1]
    assert body not in repr(said)


def test_a_key_that_is_not_the_certificate_s_is_refused(files):
    _cert, other_key = files["_ca"].issue(files["_dir"], "other", ["127.0.0.1"])
    assert judged(dict(files, key=other_key)) == [
        ("sglang_router_tls_key_src", "%s is not the key of the certificate %s" % (other_key, files["cert"]))]


def test_a_certificate_of_another_ca_is_refused(files):
    other = TestCA(files["_dir"], "other CA")
    assert [v for v, _m in judged(dict(files, ca=other.path))] == ["sglang_router_tls_ca_src"]


def test_a_certificate_that_does_not_name_the_local_address_is_refused(files):
    cert, key = files["_ca"].issue(files["_dir"], "by-name", ["router.example.com"])
    (said,) = judged(dict(files, cert=cert, key=key))
    assert said[0] == "sglang_router_tls_cert_src" and "does not name 127.0.0.1" in said[1]


def test_a_relative_path_is_refused(files):
    assert judged(dict(files, ca="ca.pem")) == [("sglang_router_tls_ca_src", "must be an absolute path on the controller, got 'ca.pem'")]


@pytest.mark.parametrize("extra, ok", [([], True), (["router.example.com", "10.1.2.3", "*.example.com"], True),
                                       ("router.example.com", False), (["bad name"], False), ([""], False)])
def test_extra_names(extra, ok):
    assert (T.name_problems("r", extra) == []) is ok


def test_stack_ca_needs_community_crypto_on_the_controller():
    router = dict(ROUTER, tls="stack_ca")
    assert T.router_tls_problems("r", router, {}) == []
    (said,) = T.router_tls_problems("r", router, {}, has_crypto_collection=False)
    assert said["variable"] == "sglang_router_tls" and "community.crypto" in said["message"]
    assert "provided" in said["fix"]
