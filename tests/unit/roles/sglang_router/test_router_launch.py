# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""roles/sglang_router/files/pdserve_router_launch.py: the keys come from systemd credentials, never argv."""
import importlib.util
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PATH = os.path.join(ROOT, "roles", "sglang_router", "files", "pdserve_router_launch.py")
SPEC = importlib.util.spec_from_file_location("pdserve_router_launch", PATH)
L = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(L)

FLAGS = ["--pd-disaggregation", "--prefill", "http://127.0.0.1:30000", "8998", "--decode", "http://127.0.0.1:30002"]
OPTIONS = ["--api-key-credential", "router-api-key", "--control-plane-api-key-credential", "router-control-plane-api-key"]


@pytest.fixture
def credentials(tmp_path):
    (tmp_path / "router-api-key").write_text("client-key-1\n")
    (tmp_path / "router-control-plane-api-key").write_text("admin-key-2")
    return {"CREDENTIALS_DIRECTORY": str(tmp_path)}


def run(argv, environ):
    """The launcher started for sglang-router, as the unit names it (every unit names its implementation)."""
    launched = []
    rc = L.main(["--implementation", "sglang-router"] + argv, environ,
                launch=lambda args, implementation: launched.append(args))
    return rc, launched


def test_keys_are_read_from_the_credentials_and_added_in_python(credentials):
    rc, launched = run(OPTIONS + ["--"] + FLAGS, credentials)
    assert rc == 0
    assert launched == [FLAGS + ["--api-key", "client-key-1",
                                 "--control-plane-api-keys", "pdserve:pdserve-operations:admin:admin-key-2"]]


def test_with_the_implementation_alone_the_flags_pass_unchanged(credentials):
    assert run(["--"] + FLAGS, {}) == (0, [FLAGS])


def test_flags_without_the_launchers_options_are_refused():
    """Without "--" every word is the router's, so the required --implementation is missing."""
    with pytest.raises(SystemExit):
        L.main(FLAGS, {}, launch=lambda *a: None)


def test_the_built_arguments_are_what_the_router_parses(credentials):
    from sglang_router.launch_router import parse_router_args
    _rc, (args,) = run(OPTIONS + ["--"] + FLAGS + ["--host", "127.0.0.1"], credentials)
    parsed = parse_router_args(args)
    assert parsed.api_key == "client-key-1"
    assert parsed.control_plane_api_keys == [("pdserve", "pdserve-operations", "admin-key-2", "admin")]
    assert parsed.pd_disaggregation and parsed.decode_urls == ["http://127.0.0.1:30002"]


@pytest.mark.parametrize("environ, why", [
    ({}, "$CREDENTIALS_DIRECTORY is not set"),
    (None, "cannot read"),
])
def test_a_missing_credential_is_refused_clearly(tmp_path, capsys, environ, why):
    environ = {"CREDENTIALS_DIRECTORY": str(tmp_path)} if environ is None else environ
    rc, launched = run(OPTIONS + ["--"] + FLAGS, environ)
    assert (rc, launched) == (2, [])
    err = capsys.readouterr().err
    assert err.startswith("pdserve_router_launch: credential router-api-key") and why in err


@pytest.mark.parametrize("content", ["", "\n", "two words", "tab\tkey", "k\u00e9y"])
def test_an_empty_or_malformed_credential_is_refused_without_showing_it(tmp_path, capsys, content):
    (tmp_path / "router-api-key").write_bytes(content.encode("utf-8"))
    rc, launched = run(["--api-key-credential", "router-api-key", "--"] + FLAGS, {"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert (rc, launched) == (2, [])
    err = capsys.readouterr().err
    assert "router-api-key" in err and (not content.strip() or content not in err)


@pytest.mark.parametrize("word", ["--api-key", "--api-key=k", "--control-plane-api-keys"])
def test_a_key_on_the_command_line_is_refused(credentials, capsys, word):
    rc, launched = run(["--"] + FLAGS + [word, "x:y:admin:k"], credentials)
    assert (rc, launched) == (2, [])
    assert "every local user can read it" in capsys.readouterr().err


# --- TLS: the certificate and key are credentials whose paths the router gets -----------------------------------

TLS_OPTIONS = ["--tls-cert-credential", "router-tls-cert", "--tls-key-credential", "router-tls-key"]
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"


@pytest.fixture
def tls_credentials(tmp_path):
    (tmp_path / "router-tls-cert").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    (tmp_path / "router-tls-key").write_text(PEM_KEY)
    return {"CREDENTIALS_DIRECTORY": str(tmp_path)}


def test_tls_flags_point_into_the_credentials_directory(tls_credentials, capsys):
    rc, launched = run(TLS_OPTIONS + ["--"] + FLAGS, tls_credentials)
    directory = tls_credentials["CREDENTIALS_DIRECTORY"]
    assert rc == 0
    assert launched == [FLAGS + ["--tls-cert-path", os.path.join(directory, "router-tls-cert"),
                                 "--tls-key-path", os.path.join(directory, "router-tls-key")]]
    # The key's content goes nowhere: not into the router's arguments, not to stderr.
    assert "MIGHAgEA" not in " ".join(launched[0]) and "MIGHAgEA" not in capsys.readouterr().err


def test_tls_and_keys_together_are_what_the_router_parses(credentials, tls_credentials):
    from sglang_router.launch_router import parse_router_args
    # Both fixtures write into the one tmp_path: the keys and the TLS files side by side, as systemd hands them.
    directory = tls_credentials["CREDENTIALS_DIRECTORY"]
    assert credentials["CREDENTIALS_DIRECTORY"] == directory
    _rc, (args,) = run(OPTIONS + TLS_OPTIONS + ["--"] + FLAGS, tls_credentials)
    parsed = parse_router_args(args)
    assert parsed.api_key == "client-key-1"
    expected = (os.path.join(directory, "router-tls-cert"), os.path.join(directory, "router-tls-key"))
    assert (parsed.server_cert_path, parsed.server_key_path) == expected


@pytest.mark.parametrize("missing, why", [
    ("router-tls-key", "cannot read"),
    ("router-tls-cert", "cannot read"),
])
def test_a_missing_tls_credential_is_refused(tls_credentials, capsys, missing, why):
    os.remove(os.path.join(tls_credentials["CREDENTIALS_DIRECTORY"], missing))
    assert run(TLS_OPTIONS + ["--"] + FLAGS, tls_credentials) == (2, [])
    err = capsys.readouterr().err
    assert err.startswith("pdserve_router_launch: credential %s" % missing) and why in err


def test_a_tls_credential_that_is_no_pem_file_is_refused_without_showing_it(tls_credentials, capsys):
    with open(os.path.join(tls_credentials["CREDENTIALS_DIRECTORY"], "router-tls-key"), "w") as handle:
        handle.write("not-a-key-s3cret")
    assert run(TLS_OPTIONS + ["--"] + FLAGS, tls_credentials) == (2, [])
    err = capsys.readouterr().err
    assert "is not a PEM file" in err and "s3cret" not in err


def test_tls_without_credentials_directory_is_refused(capsys):
    assert run(TLS_OPTIONS + ["--"] + FLAGS, {}) == (2, [])
    assert "$CREDENTIALS_DIRECTORY is not set" in capsys.readouterr().err


def test_tls_needs_both_the_certificate_and_the_key(tls_credentials, capsys):
    assert run(TLS_OPTIONS[:2] + ["--"] + FLAGS, tls_credentials) == (2, [])
    assert "needs both" in capsys.readouterr().err


@pytest.mark.parametrize("word", ["--tls-key-path", "--tls-cert-path=/tmp/c.pem"])
def test_a_tls_path_on_the_command_line_beside_the_credential_is_refused(tls_credentials, capsys, word):
    assert run(TLS_OPTIONS + ["--"] + FLAGS + [word, "/tmp/x.pem"], tls_credentials) == (2, [])
    assert "leave it to the credential" in capsys.readouterr().err


def write_workers(tmp_path, data):
    path = tmp_path / "workers.json"
    path.write_text(data if isinstance(data, str) else __import__("json").dumps(data))
    return str(path)


WORKER_SET = {"prefill": [{"url": "http://127.0.0.1:30000", "bootstrap_port": 8998}],
              "decode": [{"url": "http://127.0.0.1:30002"}, {"url": "http://127.0.0.1:30003"}]}


def test_the_workers_come_from_the_worker_set_file_and_the_router_parses_them(tmp_path):
    from sglang_router.launch_router import parse_router_args
    rc, (args,) = run(["--workers-file", write_workers(tmp_path, WORKER_SET), "--", "--pd-disaggregation"], {})
    assert rc == 0
    assert args == ["--pd-disaggregation", "--prefill", "http://127.0.0.1:30000", "8998",
                    "--decode", "http://127.0.0.1:30002", "--decode", "http://127.0.0.1:30003"]
    parsed = parse_router_args(args)
    assert parsed.prefill_urls == [("http://127.0.0.1:30000", 8998)]
    assert parsed.decode_urls == ["http://127.0.0.1:30002", "http://127.0.0.1:30003"]


@pytest.mark.parametrize("content, why", [
    ("{not json", "cannot read it as JSON"),
    ({"prefill": {"url": "x"}}, "expected"),
    ({"prefill": [{"url": "127.0.0.1:30000"}], "decode": [{"url": "http://h:1"}]}, "no http(s) url"),
    ({"prefill": [{"url": "http://h:1", "bootstrap_port": "8998"}], "decode": [{"url": "http://h:2"}]}, "not a port"),
    ({"prefill": [{"url": "http://h:1"}], "decode": []}, "at least one prefill and one decode"),
])
def test_a_bad_worker_set_file_is_refused_before_the_router_starts(tmp_path, capsys, content, why):
    rc, launched = run(["--workers-file", write_workers(tmp_path, content), "--", "--pd-disaggregation"], {})
    assert (rc, launched) == (2, [])
    assert why in capsys.readouterr().err


def test_a_missing_worker_set_file_is_refused(tmp_path, capsys):
    assert run(["--workers-file", str(tmp_path / "absent.json"), "--", "--pd-disaggregation"], {}) == (2, [])
    assert "rerun the router role" in capsys.readouterr().err


def test_workers_on_the_command_line_beside_the_worker_set_file_are_refused(tmp_path, capsys):
    rc, launched = run(["--workers-file", write_workers(tmp_path, WORKER_SET), "--"] + FLAGS, {})
    assert (rc, launched) == (2, [])
    assert "keep them in one place" in capsys.readouterr().err


def test_the_implementation_option_picks_the_package_and_is_not_a_router_flag(credentials):
    calls = []
    rc = L.main(["--implementation", "smg"] + OPTIONS + ["--"] + FLAGS, credentials,
                launch=lambda argv, implementation: calls.append((implementation, argv)))
    assert rc == 0
    assert calls == [("smg", FLAGS + ["--api-key", "client-key-1",
                                      "--control-plane-api-keys", "pdserve:pdserve-operations:admin:admin-key-2"])]


def test_without_the_option_the_launcher_refuses_to_guess(credentials):
    """The default implementation is sglang_defaults' (every unit names it): the launcher keeps no copy of it."""
    calls = []
    with pytest.raises(SystemExit):
        L.main(OPTIONS + ["--"] + FLAGS, credentials, launch=lambda argv, implementation: calls.append(implementation))
    assert calls == []


def test_launch_imports_the_chosen_package(monkeypatch):
    import sys
    import types
    seen = []
    for package in ("sglang_router", "smg"):
        fake = types.ModuleType(package + ".launch_router")
        fake.parse_router_args = lambda argv, package=package: (package, argv)
        fake.launch_router = seen.append
        monkeypatch.setitem(sys.modules, package + ".launch_router", fake)
    L._launch(["--pd-disaggregation"], "sglang-router")
    L._launch(["--pd-disaggregation"], "smg")
    assert seen == [("sglang_router", ["--pd-disaggregation"]), ("smg", ["--pd-disaggregation"])]


def test_an_unknown_implementation_is_refused():
    with pytest.raises(SystemExit):
        L.main(["--implementation", "vllm-router", "--"] + FLAGS, {}, launch=lambda *a: None)


def test_the_built_arguments_are_what_smg_parses(credentials):
    from smg.launch_router import parse_router_args
    calls = []
    L.main(["--implementation", "smg"] + OPTIONS + ["--"] + FLAGS + ["--host", "127.0.0.1"], credentials,
           launch=lambda argv, implementation: calls.append(argv))
    parsed = parse_router_args(calls[0])
    assert parsed.api_key == "client-key-1"
    assert parsed.control_plane_api_keys == [("pdserve", "pdserve-operations", "admin-key-2", "admin")]
    assert parsed.pd_disaggregation and parsed.decode_urls == ["http://127.0.0.1:30002"]


def test_the_launcher_knows_the_implementations_the_units_render():
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import ROUTER_IMPLEMENTATIONS
    assert L.IMPLEMENTATIONS == ROUTER_IMPLEMENTATIONS
