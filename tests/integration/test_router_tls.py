# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real sglang-router 0.3.2 serving its client port over TLS, with a certificate from the stack's CA as the role
makes it (roles/sglang_router/tasks/tls_ca.yml, community.crypto, run by ansible-playbook on the controller, here
loopback), started the way its unit starts it: certificate, key and keys from credential files through the launcher.

wait_ready, validate_chat and router_worker pass over https with the CA; a client without it, or with another CA, is
refused; plain http on the TLS port gets no HTTP answer; the key is on no command line."""
import json
import os
import socket
import subprocess
import sys

import pytest
import yaml

import stack

pytestmark = pytest.mark.integration
CLIENT = "client-key-tls-5d1e"
ADMIN = "admin-key-tls-c07b"
HOST = "router-tls-test"

sys.path.insert(0, os.path.join(stack.REPO, "tests", "support"))
from module_runner import run_module  # noqa: E402  pylint: disable=wrong-import-position
from tls_support import TestCA  # noqa: E402  pylint: disable=wrong-import-position,import-error


# What the router role would write on the host, laid out from its own variables (nothing is written).
RENDER_FIELDS = (
    "'files': _sglang_router_files | map(attribute='path') | list, "
    "'modes': _sglang_router_files | map(attribute='mode') | list, "
    "'credentials': _sglang_router_unit.credential_files, 'directories': _sglang_router_directories, "
    "'key_masked': _sglang_router_tls_texts.tls_key in _sglang_router_secrets, "
    "'key_in_unit': 'PRIVATE KEY' in _sglang_router_unit.unit_text, "
    "'check_lines': _sglang_router_unit.check_lines[-2:], 'url': _sglang_router_self.local_url")
RENDER = {"name": "Lay out the router's files", "ansible.builtin.debug": {"msg": "RENDER {{ {" + RENDER_FIELDS + "} | to_json }}"}}


def stack_ca_play(directory, ca_dir, extra_names=(), render=False):
    """Run the role's stack_ca tasks for one router host on loopback; (rc, the recap line, output)."""
    inventory = {"all": {"children": {"sglang_router": {"hosts": {HOST: {
        "ansible_connection": "local", "ansible_host": "127.0.0.1", "ansible_python_interpreter": sys.executable,
        "sglang_router_tls": "stack_ca", "sglang_router_tls_stack_ca_dir": str(ca_dir),
        "sglang_router_tls_extra_names": list(extra_names),
        "sglang_router_api_key": CLIENT, "sglang_router_control_plane_api_key": ADMIN,
        "sglang_prefill_instances": [{"name": "prefill-0", "port": 30000, "bootstrap_port": 8998}],
        "sglang_decode_instances": [{"name": "decode-0", "port": 30002}]}}},
        "sglang_prefill": {"hosts": {HOST: None}}, "sglang_decode": {"hosts": {HOST: None}}}}}
    play = [{"hosts": "sglang_router", "gather_facts": False, "roles": ["pdserve.sglang.sglang_defaults"],
             "tasks": [{"name": "The stack's CA and this router's certificate",
                        "ansible.builtin.include_role": {"name": "pdserve.sglang.sglang_router", "tasks_from": "tls_ca",
                                                         "public": True}}] + ([RENDER] if render else [])}]
    (directory / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (directory / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(stack.REPO, ".cache", "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(directory / "hosts.yml"), str(directory / "play.yml")],
                          capture_output=True, text=True, env=env, cwd=stack.REPO, timeout=300, check=False)
    recap = [line for line in proc.stdout.splitlines() if line.startswith(HOST + " ") and "ok=" in line]
    return proc.returncode, (recap or [""])[-1], proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def stack_ca(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stack-ca")
    ca_dir = directory / "credentials" / "router-ca"
    rc, recap, out = stack_ca_play(directory, ca_dir)
    assert rc == 0, out
    return {"directory": directory, "ca_dir": ca_dir, "first": recap, "out": out}


@pytest.fixture(scope="module")
def tls_router(stack_ca):
    ca_dir = stack_ca["ca_dir"]
    cert = (ca_dir / ("%s.pem" % HOST)).read_text()
    key = (ca_dir / ("%s.key" % HOST)).read_text()
    pre, dec = stack.Emulator("prefill"), stack.Emulator("decode")
    pre.start()
    dec.start()
    router = stack.Router(prefill=[(pre.url, pre.bootstrap_port)], decode=[dec.url], api_key=CLIENT,
                          control_plane_api_key=ADMIN, tls=(cert, key, str(ca_dir / "ca.pem")))
    try:
        pre.wait_healthy(60)
        dec.wait_healthy(60)
        router.start()
        router.wait_healthy(60)
        router.key_text = key
        yield router
    finally:
        router.stop()
        dec.stop()
        pre.stop()


def test_the_stack_ca_is_made_once_and_its_key_stays_in_its_directory(stack_ca):
    ca_dir = stack_ca["ca_dir"]
    assert "changed=" in stack_ca["first"] and "failed=0" in stack_ca["first"]
    assert sorted(p.name for p in ca_dir.iterdir()) == sorted(["ca.key", "ca.csr", "ca.pem", HOST + ".key", HOST + ".csr",
                                                               HOST + ".pem"])
    assert oct(ca_dir.stat().st_mode & 0o777) == "0o700"
    for name in ("ca.key", HOST + ".key"):
        assert oct((ca_dir / name).stat().st_mode & 0o777) == "0o600"
    assert "PRIVATE KEY-----" not in stack_ca["out"]
    # A second run with the same CA and names changes nothing: no CA and no certificate issued again.
    before = dict((p.name, p.read_bytes()) for p in ca_dir.iterdir())
    rc, recap, out = stack_ca_play(stack_ca["directory"], ca_dir)
    assert rc == 0 and "changed=0" in recap, out
    assert dict((p.name, p.read_bytes()) for p in ca_dir.iterdir()) == before


def test_the_role_lays_out_cert_and_key_as_credentials_and_the_ca_for_the_clients(stack_ca):
    rc, _recap, out = stack_ca_play(stack_ca["directory"], stack_ca["ca_dir"], render=True)
    assert rc == 0, out
    line = [x for x in out.splitlines() if '"msg": "RENDER ' in x][0]
    laid = json.loads(json.loads("{%s}" % line.strip())["msg"][len("RENDER "):])
    creds = "/etc/sglang-router/credentials/"
    assert laid["credentials"] == [creds + "router-api-key", creds + "router-control-plane-api-key",
                                   creds + "router-tls-cert", creds + "router-tls-key"]
    assert dict(zip(laid["files"], laid["modes"])) == {
        "/etc/sglang-router/router.env": "0640", "/etc/systemd/system/sglang-router.service": "0644",
        creds + "router-api-key": "0600", creds + "router-control-plane-api-key": "0600",
        creds + "router-tls-cert": "0600", creds + "router-tls-key": "0600",
        "/usr/local/libexec/pdserve/pdserve_router_launch.py": "0644", "/etc/pdserve/router-ca.pem": "0644"}
    assert {"path": "/etc/pdserve", "owner": "root", "group": "root", "mode": "0755"} in laid["directories"]
    assert laid["key_masked"] is True and laid["key_in_unit"] is False
    assert laid["check_lines"] == [["--tls-cert-path", "/run/credentials/sglang-router.service/router-tls-cert"],
                                   ["--tls-key-path", "/run/credentials/sglang-router.service/router-tls-key"]]
    assert laid["url"] == "https://127.0.0.1:30001"
    assert "PRIVATE KEY-----" not in out


def test_new_names_issue_the_certificate_again_from_the_same_ca(stack_ca, tmp_path):
    import shutil
    ca_dir = tmp_path / "router-ca"
    shutil.copytree(str(stack_ca["ca_dir"]), str(ca_dir))
    ca_before = (ca_dir / "ca.pem").read_bytes()
    rc, recap, out = stack_ca_play(tmp_path, ca_dir, extra_names=["router.example.com"])
    assert rc == 0 and "changed=2" in recap, out
    from cryptography import x509
    cert = x509.load_pem_x509_certificate((ca_dir / (HOST + ".pem")).read_bytes())
    assert "router.example.com" in cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value \
        .get_values_for_type(x509.DNSName)
    assert (ca_dir / "ca.pem").read_bytes() == ca_before


def test_a_new_ca_issues_the_router_certificate_again(stack_ca, tmp_path):
    """README "Router TLS", rotating the whole CA: delete it; the next run makes a new one and issues from it."""
    import shutil
    from cryptography import x509
    ca_dir = tmp_path / "router-ca"
    shutil.copytree(str(stack_ca["ca_dir"]), str(ca_dir))
    for name in ("ca.key", "ca.csr", "ca.pem"):
        (ca_dir / name).unlink()
    rc, recap, out = stack_ca_play(tmp_path, ca_dir)
    assert rc == 0 and "changed=4" in recap, out
    ca = x509.load_pem_x509_certificate((ca_dir / "ca.pem").read_bytes())
    x509.load_pem_x509_certificate((ca_dir / (HOST + ".pem")).read_bytes()).verify_directly_issued_by(ca)
    assert (ca_dir / (HOST + ".key")).read_bytes() == (stack_ca["ca_dir"] / (HOST + ".key")).read_bytes()


def test_the_certificate_names_the_host_its_address_and_loopback(stack_ca):
    from cryptography import x509
    cert = x509.load_pem_x509_certificate((stack_ca["ca_dir"] / (HOST + ".pem")).read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sorted(str(a) for a in sans.get_values_for_type(x509.IPAddress)) == ["127.0.0.1"]
    assert sorted(sans.get_values_for_type(x509.DNSName)) == sorted([HOST, "localhost"])


def test_wait_ready_validate_chat_and_router_worker_over_https_with_the_ca(tls_router):
    from ansible_collections.pdserve.sglang.plugins.modules import router_worker, validate_chat, wait_ready
    assert tls_router.url.startswith("https://127.0.0.1:")
    keys = {"api_key": CLIENT, "control_plane_api_key": ADMIN, "ca_path": tls_router.ca_path}
    endpoints = [{"url": tls_router.url, "kind": "router", "expected_prefill": 1, "expected_decode": 1}]
    result, failed = run_module(wait_ready.main, dict(keys, endpoints=endpoints, timeout=60))
    assert not failed, result
    result, failed = run_module(validate_chat.main, dict(keys, url=tls_router.url, timeout=60))
    assert not failed, result
    assert set(result["report"]) >= {"basic", "thinking", "tools"}
    result, failed = run_module(router_worker.main, dict(keys, url=tls_router.url, worker_url=tls_router.decode[0],
                                                         worker_type="decode", state="present", timeout=30))
    assert not failed and result["changed"] is False, result
    assert CLIENT not in json.dumps(result) and ADMIN not in json.dumps(result)
    # The certificate names localhost too.
    from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
    answer = HttpClient(api_key=CLIENT, ca_path=tls_router.ca_path, timeout=10).get(
        tls_router.url.replace("127.0.0.1", "localhost") + "/v1/models")
    assert answer.status == 200, answer.summary()


@pytest.mark.parametrize("which", ["none", "other"])
def test_a_client_without_the_ca_or_with_another_is_refused(tls_router, tmp_path, which):
    from ansible_collections.pdserve.sglang.plugins.modules import validate_chat, wait_ready
    keys = {"api_key": CLIENT, "control_plane_api_key": ADMIN}
    if which == "other":
        keys["ca_path"] = TestCA(tmp_path, "another CA").path
    endpoints = [{"url": tls_router.url, "kind": "router"}]
    result, failed = run_module(wait_ready.main, dict(keys, endpoints=endpoints, timeout=3, interval=0.5))
    assert failed and "TLS certificate not trusted" in json.dumps(result), result
    result, failed = run_module(validate_chat.main, dict(keys, url=tls_router.url, timeout=10, checks=["basic"]))
    assert failed and "TLS certificate not trusted" in json.dumps(result), result


def test_plain_http_on_the_tls_port_gets_no_http_answer(tls_router):
    with socket.create_connection(("127.0.0.1", tls_router.port), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        try:
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    # rustls answers a TLS alert, never an HTTP status line.
    assert not answer.startswith(b"HTTP/"), answer[:200]
    from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
    answer = HttpClient(api_key=CLIENT, timeout=5).get(tls_router.url.replace("https://", "http://") + "/health")
    assert answer.status is None and answer.error, answer.summary()


def test_the_key_is_on_no_command_line_and_the_router_reads_it_from_the_credentials(tls_router):
    with open("/proc/%d/cmdline" % tls_router.proc.pid, "rb") as handle:
        cmdline = handle.read().decode("utf-8", "replace")
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    body = tls_router.key_text.splitlines()[1]
    for secret in (body, CLIENT, ADMIN):
        assert secret not in cmdline and secret not in ps and secret not in tls_router.log_tail(400)
    assert "--tls-key-credential" in tls_router.command() and "--tls-key-path" not in tls_router.command()


def preflight_play(directory, host_vars):
    """The router role's preflight entry point for one router host on loopback (read-only); (rc, output)."""
    ports = dict((k, stack.free_port()) for k in ("router", "prometheus", "prefill", "bootstrap", "decode"))
    hv = {"ansible_connection": "local", "ansible_host": "127.0.0.1", "ansible_python_interpreter": sys.executable,
          "sglang_router_host": "127.0.0.1", "sglang_router_port": ports["router"],
          "sglang_router_prometheus_port": ports["prometheus"],
          "sglang_router_api_key": CLIENT, "sglang_router_control_plane_api_key": ADMIN,
          "sglang_prefill_instances": [{"name": "prefill-0", "port": ports["prefill"], "bootstrap_port": ports["bootstrap"]}],
          "sglang_decode_instances": [{"name": "decode-0", "port": ports["decode"]}]}
    hv.update(host_vars)
    inventory = {"all": {"children": {"sglang_router": {"hosts": {HOST: hv}}, "sglang_prefill": {"hosts": {HOST: None}},
                                      "sglang_decode": {"hosts": {HOST: None}}}}}
    play = [{"hosts": "sglang_router", "gather_facts": False, "roles": ["pdserve.sglang.sglang_defaults"],
             "tasks": [{"name": "Judge the router host", "ansible.builtin.include_role": {
                 "name": "pdserve.sglang.sglang_router", "tasks_from": "preflight"}}]}]
    (directory / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (directory / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(stack.REPO, ".cache", "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(directory / "hosts.yml"), str(directory / "play.yml")],
                          capture_output=True, text=True, env=env, cwd=stack.REPO, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_preflight_refuses_a_bad_tls_setup_naming_the_variable(tmp_path, stack_ca):
    rc, out = preflight_play(tmp_path, {"sglang_router_tls": "stackca"})
    assert rc != 0 and "sglang_router_tls: must be one of none, stack_ca, provided, got 'stackca'" in out, out
    missing = str(tmp_path / "missing.pem")
    rc, out = preflight_play(tmp_path, {"sglang_router_tls": "provided", "sglang_router_tls_cert_src": missing,
                                        "sglang_router_tls_key_src": missing, "sglang_router_tls_ca_src": ""})
    assert rc != 0 and "preflight found 3 problem(s)" in out, out
    assert "sglang_router_tls_cert_src: cannot be read on the controller: %s" % missing in out
    assert "sglang_router_tls_ca_src: is empty, but sglang_router_tls is provided" in out
    # A key that is not the certificate's: the stack CA's own key given with the router's certificate.
    ca_dir = stack_ca["ca_dir"]
    rc, out = preflight_play(tmp_path, {"sglang_router_tls": "provided",
                                        "sglang_router_tls_cert_src": str(ca_dir / (HOST + ".pem")),
                                        "sglang_router_tls_key_src": str(ca_dir / "ca.key"),
                                        "sglang_router_tls_ca_src": str(ca_dir / "ca.pem")})
    assert rc != 0 and "sglang_router_tls_key_src: %s is not the key of the certificate" % (ca_dir / "ca.key") in out, out
    assert "PRIVATE KEY-----" not in out
    rc, out = preflight_play(tmp_path, {"sglang_router_tls": "provided",
                                        "sglang_router_tls_cert_src": str(ca_dir / (HOST + ".pem")),
                                        "sglang_router_tls_key_src": str(ca_dir / (HOST + ".key")),
                                        "sglang_router_tls_ca_src": str(ca_dir / "ca.pem")})
    assert rc == 0, out
