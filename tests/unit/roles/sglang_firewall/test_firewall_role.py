# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What roles/sglang_firewall writes, rendered by the role itself for the shipped inventories on the controller only
(-e ansible_connection=local: the example addresses are never contacted); and a peer known by a name refused by its
preflight."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[4]
RENDER = ROOT / "tests" / "unit" / "roles" / "sglang_firewall" / "render.yml"


def _playbook(inventory, dest, *extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    return subprocess.run(
        [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(RENDER), "-i", "inventories/%s" % inventory,
         "-e", "firewall_render_dir=%s" % dest, "-e", "ansible_connection=local", *extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180, check=False)


@pytest.fixture(scope="module")
def multinode(tmp_path_factory):
    dest = tmp_path_factory.mktemp("firewall-multinode")
    proc = _playbook("multinode", dest)
    assert proc.returncode == 0, proc.stdout
    return dest


def _chain(path):
    text = path.read_text(encoding="utf-8")
    return [line.strip() for line in text.split("chain input {", 1)[1].splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_prefill_host_of_the_multinode_example(multinode):
    assert _chain(multinode / "gpu-prefill-1.nft") == [
        "type filter hook input priority filter; policy accept;",
        "iif lo accept",
        "ct state established,related accept",
        "tcp dport 8998 ip saddr { 10.0.0.21 } accept", "tcp dport 8998 reject with tcp reset",
        "tcp dport 8999 ip saddr { 10.0.0.21 } accept", "tcp dport 8999 reject with tcp reset",
        "tcp dport 9100 ip saddr { 10.0.0.5 } accept", "tcp dport 9100 reject with tcp reset",
        "tcp dport 9400 ip saddr { 10.0.0.5 } accept", "tcp dport 9400 reject with tcp reset",
        "tcp dport 30000 ip saddr { 10.0.0.5 } accept", "tcp dport 30000 reject with tcp reset",
        "tcp dport 30010 ip saddr { 10.0.0.5 } accept", "tcp dport 30010 reject with tcp reset",
        "tcp dport 30335 reject with tcp reset",
        "tcp dport 30345 reject with tcp reset",
        "}", "}"]


def test_decode_and_router_hosts_of_the_multinode_example(multinode):
    decode = _chain(multinode / "gpu-decode-1.nft")
    assert "tcp dport 30002 ip saddr { 10.0.0.5 } accept" in decode
    assert "tcp dport 30435 reject with tcp reset" in decode
    assert not any("8998" in line for line in decode)
    # The router is public; its metrics and its node exporter (Prometheus runs there) are on loopback.
    assert _chain(multinode / "router-1.nft")[3:] == ["tcp dport 30001 accept", "}", "}"]


def test_the_unit_loads_and_deletes_only_its_table(multinode):
    unit = (multinode / "router-1.service").read_text(encoding="utf-8")
    assert "ExecStart=/usr/sbin/nft -f /etc/pdserve/firewall.nft\n" in unit
    assert "ExecReload=/usr/sbin/nft -f /etc/pdserve/firewall.nft\n" in unit
    assert "ExecStop=-/usr/sbin/nft delete table inet pdserve\n" in unit
    assert "Type=oneshot\n" in unit and "RemainAfterExit=yes\n" in unit and "Before=network-pre.target" in unit
    assert not [line for line in unit.splitlines() if "flush" in line and not line.startswith("#")]


def test_a_peer_known_by_name_stops_the_preflight(tmp_path):
    proc = _playbook("multinode", tmp_path, "-e", "ansible_host=router.example.com", "--limit", "gpu-prefill-1")
    assert proc.returncode != 0
    assert "the firewall check found" in proc.stdout and "ansible_host" in proc.stdout
    assert "resolves no names" in proc.stdout and "sglang_firewall_enabled: false" in proc.stdout


def test_instances_over_several_hosts_of_the_multinode_tp_example(tmp_path):
    proc = _playbook("multinode_tp", tmp_path)
    assert proc.returncode == 0, proc.stdout
    prefill0, prefill1, decode0 = (_chain(tmp_path / ("%s.nft" % h)) for h in ("gpu-p0", "gpu-p1", "gpu-d0"))
    # Rank 0 of prefill-0: dist-init from its other node, bootstrap from it and from both decode nodes.
    assert "tcp dport 30335 ip saddr { 10.0.1.12 } accept" in prefill0
    assert "tcp dport 8998 ip saddr { 10.0.1.12, 10.0.1.21, 10.0.1.22 } accept" in prefill0
    # A rank > 0 serves neither.
    assert not [rule for rule in prefill1 if "dport 30335" in rule or "dport 8998" in rule]
    # Rank 0 of decode-0: dist-init and the attention DP ports, from its other node only.
    for port in (30435, 30436, 30441, 30448):
        assert "tcp dport %d ip saddr { 10.0.1.22 } accept" % port in decode0, decode0
    assert not [rule for rule in decode0 if "dport 30442" in rule]
