# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the preflight reads on a host (module_utils/host/observe.py): /proc/net/tcp{,6} in the kernel's own format,
socket owners and their units from a fake /proc tree, local addresses, free disk."""

import os
import pwd
import shutil
import socket

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import observe as H

HEADER4 = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
           "                                                     \n")
TCP4 = HEADER4 + (
    # 127.0.0.1:30000 LISTEN, uid 999
    "   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 41234 1 00000000dfaa633d 100 0 0 10 0"
    "                      \n"
    # 0.0.0.0:30001 LISTEN, uid 0
    "   1: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41235 1 00000000dfaa633e 100 0 0 10 0"
    "                      \n"
    # 10.0.0.11:8998 LISTEN
    "   2: 0B00000A:2326 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 41236 1 00000000dfaa633f 100 0 0 10 0"
    "                      \n"
    # an established connection to 127.0.0.1:30000: not a listener
    "   3: 0100007F:7530 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000   999        0 41299 1 00000000c9aa4600 20 4 30 10 -1"
    "                     \n"
    # TIME_WAIT: fewer fields
    "   4: 0100007F:DE4B 0100007F:D37C 06 00000000:00000000 03:00000C96 00000000     0        0 0 3 00000000c9aa4619"
    "                                      \n"
)
HEADER6 = ("  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when"
           " retrnsmt   uid  timeout inode\n")
TCP6 = HEADER6 + (
    # [::]:30002 LISTEN
    "   0: 00000000000000000000000000000000:7532 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000"
    "     0        0 51000 1 0000000000000000 100 0 0 10 0\n"
    # [::1]:29000 LISTEN
    "   1: 00000000000000000000000001000000:7148 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000"
    "   999        0 51001 1 0000000000000000 100 0 0 10 0\n"
    # [fd00::2]:30010 LISTEN
    "   2: 000000FD000000000000000002000000:753A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000"
    "   999        0 51002 1 0000000000000000 100 0 0 10 0\n"
    # [::ffff:127.0.0.1]:22 LISTEN
    "   3: 0000000000000000FFFF00000100007F:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000"
    "     0        0 51003 1 0000000000000000 100 0 0 10 0\n"
    # established [fe80::5054:ff:fe1d:adb6]:22: not a listener
    "   4: 000080FE00000000FF005450B6AD1DFE:0016 000080FE00000000FF005450B6AD1DFF:C350 01 00000000:00000000 00:00000000 00000000"
    "     0        0 51004 1 0000000000000000 20 4 30 10 -1\n"
)


def test_parse_ipv4_listeners():
    assert H.parse_proc_net_tcp(TCP4) == [
        {"address": "127.0.0.1", "port": 30000, "uid": 999, "inode": "41234"},
        {"address": "0.0.0.0", "port": 30001, "uid": 0, "inode": "41235"},
        {"address": "10.0.0.11", "port": 8998, "uid": 999, "inode": "41236"},
    ]


def test_parse_ipv6_listeners():
    assert H.parse_proc_net_tcp(TCP6, ipv6=True) == [
        {"address": "::", "port": 30002, "uid": 0, "inode": "51000"},
        {"address": "::1", "port": 29000, "uid": 999, "inode": "51001"},
        {"address": "fd00::2", "port": 30010, "uid": 999, "inode": "51002"},
        {"address": "::ffff:127.0.0.1", "port": 22, "uid": 0, "inode": "51003"},
    ]


def test_parse_header_only_or_empty():
    assert H.parse_proc_net_tcp(HEADER4) == []
    assert H.parse_proc_net_tcp("") == []


def test_parse_this_machines_own_table():
    """The real /proc/net/tcp of the test machine parses without error into plausible listeners."""
    try:
        with open("/proc/net/tcp") as handle:
            text = handle.read()
    except (IOError, OSError):
        pytest.skip("no /proc/net/tcp")
    for sock in H.parse_proc_net_tcp(text):
        socket.inet_aton(sock["address"])
        assert 0 <= sock["port"] <= 65535 and sock["uid"] >= 0 and sock["inode"].isdigit()


@pytest.mark.parametrize("text, unit", [
    ("0::/system.slice/sglang-prefill.service\n", "sglang-prefill.service"),
    ("0::/system.slice/system-getty.slice/getty@tty1.service\n", "getty@tty1.service"),
    ("0::/system.slice/sglang-decode.service/payload\n", "sglang-decode.service"),
    ("12:pids:/system.slice/nginx.service\n11:memory:/system.slice/nginx.service\n1:name=systemd:/system.slice/nginx.service\n",
     "nginx.service"),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
    ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service\n", None),
    ("0::/system.slice/docker-0123abcd.scope\n", None),
    ("0::/\n", None),
    ("", None),
    (None, None),
])
def test_unit_of_cgroup(text, unit):
    assert H.unit_of_cgroup(text) == unit


def fake_proc(root, processes, tcp=TCP4, tcp6=TCP6):
    """root/proc with net/tcp{,6} and, per pid, fd symlinks and a cgroup file."""
    proc = root / "proc"
    (proc / "net").mkdir(parents=True)
    if tcp is not None:
        (proc / "net" / "tcp").write_text(tcp)
    if tcp6 is not None:
        (proc / "net" / "tcp6").write_text(tcp6)
    (proc / "self").mkdir()
    for pid, (targets, cgroup) in processes.items():
        fd = proc / pid / "fd"
        fd.mkdir(parents=True)
        for number, target in enumerate(targets):
            os.symlink(target, str(fd / str(number)))
        if cgroup is not None:
            (proc / pid / "cgroup").write_text(cgroup)
    return str(root)


def test_listeners_with_owners(tmp_path):
    root = fake_proc(tmp_path, {
        "1380": (["/dev/null", "socket:[41234]", "pipe:[5]"], "0::/system.slice/sglang-prefill.service\n"),
        "1381": (["socket:[41234]"], "0::/system.slice/sglang-prefill.service\n"),
        "99": (["socket:[41235]", "socket:[51000]"], "12:pids:/system.slice/nginx.service\n"),
        "4242": (["socket:[51002]"], "0::/user.slice/user-1000.slice/session-3.scope\n"),
        "77": (["socket:[51001]"], None),
    })
    result = H.listeners(root)
    assert result == [
        {"address": "127.0.0.1", "port": 30000, "uid": 999,
         "owners": [{"pid": "1380", "unit": "sglang-prefill.service"}, {"pid": "1381", "unit": "sglang-prefill.service"}]},
        {"address": "0.0.0.0", "port": 30001, "uid": 0, "owners": [{"pid": "99", "unit": "nginx.service"}]},
        {"address": "10.0.0.11", "port": 8998, "uid": 999, "owners": []},
        {"address": "::", "port": 30002, "uid": 0, "owners": [{"pid": "99", "unit": "nginx.service"}]},
        {"address": "::1", "port": 29000, "uid": 999, "owners": [{"pid": "77", "unit": "none"}]},
        {"address": "fd00::2", "port": 30010, "uid": 999, "owners": [{"pid": "4242", "unit": "none"}]},
        {"address": "::ffff:127.0.0.1", "port": 22, "uid": 0, "owners": []},
    ]


def test_socket_owners_sorted_by_pid_and_unreadable_fds_skipped(tmp_path):
    root = fake_proc(tmp_path, {"10": (["socket:[41234]"], ""), "9": (["socket:[41234]"], ""), "100": (["socket:[41234]"], "")})
    (tmp_path / "proc" / "555").mkdir()  # a process whose fd directory cannot be read (gone or not ours)
    owners = H.socket_owners(root)
    assert list(owners) == ["41234"] and sorted(owners["41234"], key=int) == ["9", "10", "100"]
    assert [o["pid"] for o in H.listeners(root)[0]["owners"]] == ["9", "10", "100"]


def test_listeners_without_ipv6_table_or_proc(tmp_path):
    root = fake_proc(tmp_path / "a", {}, tcp6=None)
    assert [(s["address"], s["port"], s["owners"]) for s in H.listeners(root)] == [
        ("127.0.0.1", 30000, []), ("0.0.0.0", 30001, []), ("10.0.0.11", 8998, [])]
    empty = tmp_path / "b"
    empty.mkdir()
    assert H.listeners(str(empty)) == []
    assert H.socket_owners(str(empty)) == {}


def test_address_is_local():
    assert H.address_is_local("127.0.0.1") == (True, None)
    # 203.0.113.0/24 is a documentation range: no host has it.
    assert H.address_is_local("203.0.113.9") == (False, "is not an address of this host")


def test_address_that_does_not_resolve(monkeypatch):
    def fail(*_args, **_kwargs):
        raise socket.gaierror(-2, "Name or service not known")
    monkeypatch.setattr(H.socket, "getaddrinfo", fail)
    ok, why = H.address_is_local("gpu-1.invalid")
    assert ok is False and why.startswith("does not resolve (") and "Name or service not known" in why


def test_ipv6_loopback_is_local_where_ipv6_works():
    try:
        probe = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        probe.bind(("::1", 0))
        probe.close()
    except (IOError, OSError):
        pytest.skip("no IPv6 loopback here")
    assert H.address_is_local("::1") == (True, None)
    assert H.address_is_local("2001:db8::9") == (False, "is not an address of this host")


def test_nearest_existing(tmp_path):
    assert H.nearest_existing(str(tmp_path / "a" / "b" / "c")) == str(tmp_path)
    assert H.nearest_existing(str(tmp_path)) == str(tmp_path)
    assert H.nearest_existing("/") == "/"
    assert H.nearest_existing(None) == "/"
    assert H.nearest_existing("") == "/"


def test_free_gib(tmp_path):
    expected = round(shutil.disk_usage(str(tmp_path)).free / 2.0 ** 30, 1)
    assert abs(H.free_gib(str(tmp_path / "not" / "yet")) - expected) <= 0.2
    assert isinstance(H.free_gib(str(tmp_path)), float)
    assert H.free_gib(str(tmp_path)) >= 0


def test_uids_of_the_users_that_exist_only():
    me = pwd.getpwuid(os.getuid()).pw_name
    assert H.uids_of([me, "pdserve-no-such-user"]) == [os.getuid()]
