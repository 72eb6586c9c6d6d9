# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What install_facts reads of a host (plugins/module_utils/install/host.py): real commands where this
machine has them (its own Python), stand-ins for what it may lack (ucx_info, nvcc)."""

import collections
import os
import stat
import subprocess
import sys

from ansible_collections.pdserve.sglang.plugins.module_utils.install import host as H

Usage = collections.namedtuple("Usage", "total used free")
GIB = 2 ** 30


def run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def no_tools(name):
    return None


def test_python_info_of_a_real_interpreter():
    info, libc, machine = H.python_info(run, sys.executable)
    assert info["found"] is True and info["error"] == ""
    assert info["version"] == "%d.%d" % sys.version_info[:2]
    assert info["full_version"].startswith(info["version"] + ".")
    assert isinstance(info["venv"], bool)
    assert libc["name"] in ("glibc", "")
    assert machine


def test_python_info_missing_and_broken_interpreters(tmp_path):
    info, libc, machine = H.python_info(run, str(tmp_path / "python9"))
    assert info["found"] is False and "does not exist" in info["error"]
    assert libc == {"name": "", "version": ""} and machine == ""
    broken = script(tmp_path, "python", "echo 'no such module' >&2; exit 1")
    info, libc, machine = H.python_info(run, broken)
    assert info["found"] is False
    assert "rc 1" in info["error"] and "no such module" in info["error"]


def test_python_info_without_venv_module(tmp_path):
    # What a Debian python3 without python3-venv answers.
    fake = script(tmp_path, "python", """echo '{"version": "3.11", "full_version": "3.11.2", "venv": false, \
"libc": ["glibc", "2.36"], "machine": "aarch64"}'""")
    info, libc, machine = H.python_info(run, fake)
    assert info == {"path": fake, "found": True, "version": "3.11", "full_version": "3.11.2", "venv": False, "error": ""}
    assert libc == {"name": "glibc", "version": "2.36"} and machine == "aarch64"


def test_system_ucx_from_ucx_info_and_from_libucp(tmp_path):
    ucx_info = script(tmp_path, "ucx_info", 'echo "# Library version: 1.16.0"')
    found = H.system_ucx(run, lambda name: ucx_info if name == "ucx_info" else None,
                         find_library=lambda name: None, patterns=())
    assert found == {"present": True, "ucx_info": ucx_info, "libucp": "", "version": "1.16.0"}

    lib = tmp_path / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libucp.so.0").write_text("")
    found = H.system_ucx(run, no_tools, find_library=lambda name: None, patterns=(str(tmp_path / "lib" / "*" / "libucp.so*"),))
    assert found["present"] is True and found["libucp"] == str(lib / "libucp.so.0") and found["version"] == ""

    found = H.system_ucx(run, no_tools, find_library=lambda name: "libucp.so.0", patterns=())
    assert found["present"] is True and found["libucp"] == "libucp.so.0"

    assert H.system_ucx(run, no_tools, find_library=lambda name: None, patterns=())["present"] is False


def test_cuda_toolkit_prefers_cuda_home_over_path(tmp_path):
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    nvcc = script(home / "bin", "nvcc", 'echo "Cuda compilation tools, release 13.0, V13.0.88"')
    other = script(tmp_path, "nvcc", 'echo "Cuda compilation tools, release 12.8, V12.8.93"')
    assert H.cuda_toolkit(run, lambda name: other, str(home)) == {"home": str(home), "nvcc": nvcc, "version": "13.0"}
    # No toolkit under cuda_home: the nvcc on PATH.
    assert H.cuda_toolkit(run, lambda name: other, str(tmp_path / "none"))["version"] == "12.8"
    assert H.cuda_toolkit(run, no_tools, str(tmp_path / "none")) == {"home": str(tmp_path / "none"), "nvcc": "", "version": ""}


def test_disk_existing_paths_need_nothing_and_needs_add_up(tmp_path):
    (tmp_path / "venv").mkdir()
    entries = [
        {"name": "venv", "path": str(tmp_path / "venv"), "min_free_gb": 1},
        {"name": "build", "path": str(tmp_path / "new" / "build"), "min_free_gb": 2},
        {"name": "model", "path": str(tmp_path / "models" / "m"), "min_free_gb": 5},
    ]
    disk = dict((d["name"], d) for d in H.disk(entries, usage=lambda path: Usage(0, 0, 6 * GIB)))
    assert disk["venv"]["exists"] is True and disk["venv"]["need_gb"] == 0
    assert disk["build"]["checked"] == str(tmp_path)  # the nearest existing ancestor
    assert disk["build"]["need_gb"] == 2 and disk["model"]["need_gb"] == 5
    assert disk["model"]["need_gb_total"] == 7  # one filesystem: 2 + 5 (+ 0 for the existing venv)
    assert sorted(disk["model"]["shared_with"]) == ["build", "venv"]
    assert disk["model"]["free_gb"] == 6.0
    assert disk["model"]["ok"] is False and disk["build"]["ok"] is False
    # The existing venv needs nothing, however full the filesystem: it is not what to fix.
    assert disk["venv"]["ok"] is True
    assert "device" not in disk["venv"]


def test_disk_enough_space_and_bad_paths(tmp_path):
    entries = [{"name": "venv", "path": str(tmp_path / "v"), "min_free_gb": 3},
               {"name": "model", "path": "models/m", "min_free_gb": 1},
               {"name": "build", "path": "", "min_free_gb": 1}]
    venv, model, build = H.disk(entries, usage=lambda path: Usage(0, 0, 3 * GIB))
    assert venv["ok"] is True and venv["need_gb_total"] == 3
    assert model["ok"] is False and "not an absolute path" in model["error"]
    assert build["ok"] is False and build["error"]


def test_path_and_user_info(tmp_path):
    (tmp_path / "file").write_text("x")
    info = H.path_info([str(tmp_path), str(tmp_path / "file"), str(tmp_path / "absent")])
    assert info[str(tmp_path)]["isdir"] is True and info[str(tmp_path)]["exists"] is True
    assert info[str(tmp_path / "file")] == dict(info[str(tmp_path / "file")], exists=True, isdir=False)
    assert info[str(tmp_path / "file")]["owner"]
    assert info[str(tmp_path / "absent")] == {"exists": False, "isdir": False, "owner": "", "group": "", "mode": ""}
    os.chmod(str(tmp_path / "file"), 0o2750)
    assert H.path_info([str(tmp_path / "file")])[str(tmp_path / "file")]["mode"] == "2750"
    users = H.user_info(["root", "pdserve-no-such-user"])
    assert users["root"]["exists"] is True and users["root"]["uid"] == 0
    assert users["pdserve-no-such-user"] == {"exists": False, "uid": None, "home": ""}


def test_gather_has_every_key(tmp_path):
    facts = H.gather(run, no_tools, sys.executable, str(tmp_path), [{"name": "venv", "path": str(tmp_path / "v"), "min_free_gb": 0}],
                     [str(tmp_path)], ["root"])
    assert sorted(facts) == ["cc", "cuda", "disk", "git", "libc", "machine", "paths", "python", "ucx", "umask", "users",
                             "venv_packages"]
    assert facts["git"] == "" and facts["cc"] == "" and facts["cuda"]["nvcc"] == ""
    assert facts["disk"][0]["ok"] is True


def test_gather_falls_back_to_this_interpreters_libc(tmp_path):
    facts = H.gather(run, no_tools, str(tmp_path / "python-absent"), "", [], [], [])
    assert facts["python"]["found"] is False
    assert facts["libc"]["name"] in ("glibc", "") and facts["machine"] == os.uname()[4]


def test_venv_packages_of_a_real_venv(tmp_path):
    """This interpreter's own distributions (pytest is one of them), read like a venv's."""
    found = H.venv_packages(run, sys.executable)
    assert found.get("pytest", found.get("Pytest")) not in (None, "")
    assert H.gather(run, no_tools, sys.executable, "", [], [], [], venv_python=sys.executable)["venv_packages"] == found


def test_venv_packages_of_no_venv_or_a_broken_one(tmp_path):
    assert H.venv_packages(run, None) == {}
    assert H.venv_packages(run, str(tmp_path / "venv" / "bin" / "python")) == {}
    assert H.venv_packages(run, script(tmp_path, "python", "exit 1")) == {}
    assert H.venv_packages(run, script(tmp_path, "python2", "echo not json")) == {}
    assert H.venv_packages(run, script(tmp_path, "python3", "echo '[1, 2]'")) == {}
    assert H.venv_packages(run, script(tmp_path, "python4", 'echo \'{"a-b": "1.0", "": "2"}\'')) == {"a-b": "1.0"}


def test_umask_is_read_and_left_as_it_was():
    before = os.umask(0o027)
    try:
        assert H.current_umask() == 0o027
        assert H.current_umask() == 0o027
    finally:
        os.umask(before)


MOUNTINFO = """22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/l
25 22 0:23 / /opt/sglang/venvs/sglang-90.0.4 rw,relatime - tmpfs pdserve-small rw,size=65536k
26 22 0:24 /venv /opt/my\\040venvs rw - tmpfs tmp\\040fs rw
27 25 0:25 / /opt/sglang/venvs/sglang-90.0.4 rw - tmpfs on-top rw
broken line
"""


def test_mount_table_and_the_filesystem_of_a_path():
    table = H.mount_table(MOUNTINFO)
    assert table[0] == {"mount": "/", "fstype": "overlay", "source": "overlay"}
    assert table[2] == {"mount": "/opt/my venvs", "fstype": "tmpfs", "source": "tmp fs"}  # octal escapes undone
    assert len(table) == 4  # the broken line is skipped
    assert H.filesystem_of("/opt/sglang/venvs", table)["mount"] == "/"
    # The longest mount point that holds the path; of two at one point, the one mounted last (on top).
    assert H.filesystem_of("/opt/sglang/venvs/sglang-90.0.4/bin", table)["source"] == "on-top"
    assert H.filesystem_of("/opt/sglang/venvs/sglang-90.0.4x", table)["mount"] == "/"
    assert H.filesystem_of("/x", []) == {"mount": "", "fstype": "", "source": ""}


def test_disk_reports_the_filesystem_and_its_bytes(tmp_path):
    entries = [{"name": "venv", "path": str(tmp_path / "v"), "min_free_gb": 1}]
    table = [{"mount": "/", "fstype": "ext4", "source": "/dev/sda1"},
             {"mount": str(tmp_path), "fstype": "tmpfs", "source": "small"}]
    venv, = H.disk(entries, usage=lambda path: Usage(64 * 2 ** 20, 0, 16 * 2 ** 20), mounts=lambda: table)
    assert venv["filesystem"] == {"mount": str(tmp_path), "fstype": "tmpfs", "source": "small"}
    assert venv["free_bytes"] == 16 * 2 ** 20 and venv["size_bytes"] == 64 * 2 ** 20
    assert venv["free_gb"] == 0.0 and venv["ok"] is False


def test_disk_an_empty_venv_directory_or_an_incomplete_venv_still_needs_its_space(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()  # a mount point, or what an interrupted run left
    entry = {"name": "venv", "path": str(venv), "min_free_gb": 1, "present": str(venv / "bin" / "python"),
             "incomplete": str(venv / "pdserve-install-incomplete")}

    def measure():
        return H.disk([entry], usage=lambda path: Usage(0, 0, GIB // 2), mounts=lambda: [])[0]
    assert measure()["exists"] is False and measure()["need_gb"] == 1 and measure()["ok"] is False
    assert measure()["checked"] == str(venv)  # measured where the venv goes: a filesystem mounted there counts
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text("")
    assert measure()["exists"] is True and measure()["ok"] is True  # a venv in place needs nothing
    (venv / "pdserve-install-incomplete").write_text("")
    assert measure()["exists"] is False and measure()["ok"] is False  # unless an install stopped in it
