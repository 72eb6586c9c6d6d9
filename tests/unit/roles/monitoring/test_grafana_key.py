# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Grafana's apt key is trusted only when the downloaded file holds exactly the expected primary keys (real Debian
archive keys from tests/unit/fixtures/openpgp stand in for Grafana's, which cannot be fetched here)."""

import functools
import http.server
import json
import os
import pathlib
import subprocess
import sys
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[4]
PLAY = ROOT / "tests" / "unit" / "roles" / "monitoring" / "grafana_key.yml"
KEYS = ROOT / "tests" / "unit" / "fixtures" / "openpgp"
STABLE = "4D64FEC119C2029067D6E791F8D2585B8783D481"
AUTOMATIC = "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8"


@pytest.fixture(scope="module")
def key_server(tmp_path_factory):
    served = tmp_path_factory.mktemp("keys")
    stable = (KEYS / "debian-archive-bookworm-stable.asc").read_text(encoding="utf-8")
    automatic = (KEYS / "debian-archive-bookworm-automatic.asc").read_text(encoding="utf-8")
    (served / "one.asc").write_text(stable, encoding="utf-8")
    (served / "two.asc").write_text(stable + automatic, encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()


def _run(url, fingerprints, keyring):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    extra = json.dumps({"monitoring_grafana_apt_key_url": url, "monitoring_grafana_apt_key_fingerprints": fingerprints,
                        "grafana_keyring": str(keyring), "ansible_python_interpreter": sys.executable})
    return subprocess.run(
        [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(PLAY), "-i", "localhost,", "-e", extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180, check=False)


def test_the_expected_key_is_written(key_server, tmp_path):
    keyring = tmp_path / "grafana.asc"
    proc = _run(key_server + "/one.asc", ["4D64 FEC1 19C2 0290 67D6  E791 F8D2 585B 8783 D481"], keyring)
    assert proc.returncode == 0, proc.stdout
    assert keyring.read_text(encoding="utf-8") == (KEYS / "debian-archive-bookworm-stable.asc").read_text(encoding="utf-8")


def test_an_extra_key_in_the_file_is_refused_and_nothing_is_written(key_server, tmp_path):
    keyring = tmp_path / "grafana.asc"
    proc = _run(key_server + "/two.asc", [STABLE], keyring)
    assert proc.returncode != 0
    assert "holds the key(s) %s, %s" % (STABLE, AUTOMATIC) in proc.stdout.replace("\n", " ") or \
        "holds the key(s) %s, %s" % (AUTOMATIC, STABLE) in proc.stdout.replace("\n", " "), proc.stdout
    assert "monitoring_grafana_apt_key_fingerprints" in proc.stdout
    assert not keyring.exists()


def test_another_key_is_refused(key_server, tmp_path):
    keyring = tmp_path / "grafana.asc"
    proc = _run(key_server + "/one.asc", [AUTOMATIC], keyring)
    assert proc.returncode != 0
    assert "trusts exactly %s" % AUTOMATIC in proc.stdout.replace("\n", " "), proc.stdout
    assert not keyring.exists()


def test_both_keys_expected_accept_the_bundle(key_server, tmp_path):
    keyring = tmp_path / "grafana.asc"
    proc = _run(key_server + "/two.asc", [AUTOMATIC, STABLE.lower()], keyring)
    assert proc.returncode == 0, proc.stdout
    assert keyring.exists()
