# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The service account plan: only what differs, in the order the tools need."""

import grp
import os
import pwd

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import service_account
from ansible_collections.pdserve.sglang.plugins.module_utils.host.service_account import differs, plan

WANT = {"name": "sglang", "group": "sglang", "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin",
        "extra_groups": ["video", "render"], "config_dir": "/etc/sglang", "config_mode": "0750"}
DIRS_OK = {"/var/lib/sglang": {"owner": "sglang", "group": "sglang", "mode": "0700"},
           "/etc/sglang": {"owner": "root", "group": "sglang", "mode": "0750"}}


def converged(**user):
    base = {"gid_name": "sglang", "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin", "groups": ["video"]}
    base.update(user)
    return {"groups": {"sglang", "video"}, "user": base, "dirs": dict(DIRS_OK)}


def test_a_new_host_gets_group_user_and_directories_in_order():
    commands, dirs, skipped = plan(WANT, {"groups": {"video"}, "user": None,
                                          "dirs": {"/var/lib/sglang": None, "/etc/sglang": None}})
    assert commands == [
        ["groupadd", "--system", "sglang"],
        ["useradd", "--system", "--gid", "sglang", "--home-dir", "/var/lib/sglang", "--create-home",
         "--shell", "/usr/sbin/nologin", "--groups", "video", "sglang"],
    ]
    assert [(d["path"], d["owner"], d["group"], d["mode"], d["create"]) for d in dirs] == [
        ("/var/lib/sglang", "sglang", "sglang", "0750", True), ("/etc/sglang", "root", "sglang", "0750", True)]
    assert skipped == ["render"]


def test_a_converged_host_needs_nothing():
    assert plan(WANT, converged()) == ([], [], ["render"])


def test_only_the_differences_are_changed():
    commands, dirs, dummy_skipped = plan(WANT, converged(shell="/bin/bash", groups=[]))
    assert commands == [["usermod", "--shell", "/usr/sbin/nologin", "--append", "--groups", "video", "sglang"]]
    assert dirs == []
    commands, dummy_dirs, dummy_skipped = plan(WANT, converged(gid_name="users", home="/home/sglang"))
    assert commands == [["usermod", "--gid", "sglang", "--home", "/var/lib/sglang", "sglang"]]


def test_the_config_dir_is_fixed_but_the_home_is_only_created():
    have = converged()
    have["dirs"] = {"/var/lib/sglang": {"owner": "root", "group": "root", "mode": "0755"},
                    "/etc/sglang": {"owner": "root", "group": "root", "mode": "0755"}}
    dummy_commands, dirs, dummy_skipped = plan(WANT, have)
    assert [(d["path"], d["group"], d["mode"], d["create"]) for d in dirs] == [("/etc/sglang", "sglang", "0750", False)]


def test_without_config_dir_and_extra_groups():
    want = dict(WANT, extra_groups=[], config_dir=None)
    have = converged()
    have["dirs"] = {"/var/lib/sglang": DIRS_OK["/var/lib/sglang"]}
    assert plan(want, have) == ([], [], [])


def test_differs_reads_the_host_and_fills_the_service_account_defaults(tmp_path):
    me = pwd.getpwuid(os.getuid())
    mine = {"name": me.pw_name, "group": grp.getgrgid(me.pw_gid).gr_name, "home": me.pw_dir, "shell": me.pw_shell}
    assert differs(None) is None
    assert differs(mine) is False
    # Left out, the shell is the service_account module's default, which root's login shell is not.
    assert differs(dict(mine, shell=None)) is (me.pw_shell != "/usr/sbin/nologin")
    assert differs(dict(mine, config_dir=str(tmp_path / "missing"))) is True


# --- run_as: a probe started as root drops it before it touches memory or the network ----------------------------------

class FakeIds(object):
    """The os functions run_as calls, recording them; ``uid``: whom the process runs as."""

    def __init__(self, uid):
        self.uid = uid
        self.calls = []
        self.environ = {}

    def geteuid(self):
        return self.uid

    getuid = geteuid

    def initgroups(self, user, gid):
        self.calls.append(("initgroups", user, gid))

    def setgid(self, gid):
        self.calls.append(("setgid", gid))

    def setuid(self, uid):
        self.calls.append(("setuid", uid))
        self.uid = uid

    def chdir(self, path):
        self.calls.append(("chdir", path))


def test_run_as_drops_root_groups_first_then_the_user():
    nobody = pwd.getpwnam("nobody")
    ids = FakeIds(0)
    assert service_account.run_as("nobody", ids) is None
    # setgid after setuid would be refused: the groups go first, while still root.
    assert ids.calls == [("initgroups", "nobody", nobody.pw_gid), ("setgid", nobody.pw_gid), ("setuid", nobody.pw_uid),
                         ("chdir", "/")]
    assert ids.environ == {"HOME": nobody.pw_dir, "USER": "nobody", "LOGNAME": "nobody"}


def test_run_as_the_user_it_already_is_changes_nothing():
    ids = FakeIds(pwd.getpwnam("nobody").pw_uid)
    assert service_account.run_as("nobody", ids) is None and ids.calls == []


def test_run_as_refuses_an_unknown_user_and_a_switch_it_is_not_allowed():
    ids = FakeIds(0)
    assert "no user pdserve-no-such-user" in service_account.run_as("pdserve-no-such-user", ids) and ids.calls == []
    ids = FakeIds(1234)
    assert "only root can switch to nobody" in service_account.run_as("nobody", ids) and ids.calls == []


def test_run_as_says_so_when_the_switch_did_not_take():
    class Stuck(FakeIds):
        def setuid(self, uid):
            self.calls.append(("setuid", uid))

    assert "still uid 0" in service_account.run_as("nobody", Stuck(0))


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root (the probe's real start)")
def test_run_as_really_switches_a_process():
    """In a child process: after run_as it is nobody, in nobody's groups, and cannot read root's files."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        os.close(read)
        refused = service_account.run_as("nobody")
        denied = not os.access("/root", os.R_OK)
        os.write(write, ("%s %d %d %s" % (refused, os.getuid(), os.getgid(), denied)).encode())
        os._exit(0)
    os.close(write)
    answer = os.read(read, 200).decode()
    os.waitpid(child, 0)
    nobody = pwd.getpwnam("nobody")
    assert answer == "None %d %d True" % (nobody.pw_uid, nobody.pw_gid)
