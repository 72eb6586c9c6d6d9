# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""ownership.convert: only the old owner's entries change, modes lose group/other write and set-ID bits, links are
never followed, nothing is removed, and a converted tree reports nothing to do. Changing owners needs root: those
tests run where the tests run as root (CI does) and are skipped elsewhere."""

import os
import stat

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.install import ownership as O

OLD = 54321  # the service user of an earlier version (any uid will do: only numbers are compared)
ME, MY_GID = os.getuid(), os.getgid()
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def tree(tmp_path):
    """An old venv: directories and files (one group-writable, one setuid), a link out of the tree, a link to a
    directory out of the tree, a dangling link, a FIFO, and a file the user put there."""
    top = tmp_path / "venv"
    (top / "lib" / "site").mkdir(parents=True)
    (top / "bin").mkdir()
    (top / "lib" / "site" / "mod.py").write_text("x = 1\n")
    (top / "lib" / "site" / "writable.py").write_text("")
    os.chmod(top / "lib" / "site" / "writable.py", 0o666)
    (top / "bin" / "tool").write_text("#!/bin/sh\n")
    os.chmod(top / "bin" / "tool", 0o4777)
    os.chmod(top / "lib", 0o2777)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    os.chmod(outside / "secret", 0o666)
    os.symlink(str(outside / "secret"), str(top / "bin" / "python"))
    os.symlink(str(outside), str(top / "lib64"))
    os.symlink(str(tmp_path / "gone"), str(top / "dangling"))
    os.mkfifo(str(top / "fifo"))
    (top / "notes.txt").write_text("mine")
    return top, outside


def entries(top):
    found = [top]
    for dirpath, dirnames, filenames in os.walk(top):
        found += [os.path.join(dirpath, name) for name in dirnames + filenames]
    return sorted(str(p) for p in found)


def test_modes_lose_write_for_others_and_set_id_bits_and_links_are_not_followed(tmp_path):
    top, outside = tree(tmp_path)
    before = entries(top)
    counts = O.convert(str(top), ME, MY_GID, from_uid=ME)
    assert counts["others"] == 0 and counts["changed"] > 0
    assert mode(top / "lib" / "site" / "writable.py") == 0o644
    assert mode(top / "bin" / "tool") == 0o755
    assert mode(top / "lib") == 0o755
    # Outside the tree nothing changed, through either link.
    assert mode(outside / "secret") == 0o666 and mode(outside) == stat.S_IMODE(os.stat(outside).st_mode)
    assert os.path.islink(top / "bin" / "python") and os.path.islink(top / "lib64") and os.path.islink(top / "dangling")
    assert stat.S_ISFIFO(os.lstat(top / "fifo").st_mode)
    assert entries(top) == before and (top / "notes.txt").read_text() == "mine"  # nothing removed
    # Converted: nothing left to do.
    assert O.convert(str(top), ME, MY_GID, from_uid=ME)["changed"] == 0


def test_check_mode_counts_and_changes_nothing(tmp_path):
    top, dummy = tree(tmp_path)
    counts = O.convert(str(top), ME, MY_GID, from_uid=ME, check=True)
    assert counts["changed"] == O.convert(str(top), ME, MY_GID, from_uid=ME)["changed"] > 0
    top2, dummy = tree(tmp_path / "again")
    O.convert(str(top2), ME, MY_GID, from_uid=ME, check=True)
    assert mode(top2 / "bin" / "tool") == 0o4777


def test_entries_of_other_owners_are_left_as_they_are(tmp_path):
    top, dummy = tree(tmp_path)
    counts = O.convert(str(top), OLD, OLD, from_uid=OLD + 1)
    assert counts["changed"] == 0 and counts["others"] == len(entries(top))
    assert mode(top / "bin" / "tool") == 0o4777


def test_only_a_directory_is_converted(tmp_path):
    (tmp_path / "f").write_text("")
    os.symlink(str(tmp_path), str(tmp_path / "link"))
    for path in (tmp_path / "f", tmp_path / "link"):
        with pytest.raises(ValueError, match="is not a directory"):
            O.convert(str(path), ME, MY_GID, from_uid=ME)


@needs_root
def test_the_old_owners_entries_get_the_new_owner_and_the_others_stay(tmp_path):
    top, outside = tree(tmp_path)
    for path in entries(top):
        os.lchown(path, OLD, OLD)
    os.lchown(str(outside / "secret"), OLD, OLD)
    os.lchown(str(top / "notes.txt"), 4242, 4242)  # someone else's file in the tree
    counts = O.convert(str(top), 0, 0, from_uid=OLD)
    assert counts["others"] == 1
    owners = {path: (os.lstat(path).st_uid, os.lstat(path).st_gid) for path in entries(top)}
    assert owners.pop(str(top / "notes.txt")) == (4242, 4242)
    assert set(owners.values()) == {(0, 0)}
    # The links' targets outside the tree keep their owner; a set-user-ID file does not become a root one.
    assert (os.lstat(outside / "secret").st_uid, mode(outside / "secret")) == (OLD, 0o666)
    assert mode(top / "bin" / "tool") == 0o755
    assert O.convert(str(top), 0, 0, from_uid=OLD) == {"changed": 0, "others": 1}


def test_message():
    assert O.message("/v", "root", "root", "sglang", {"changed": 3, "others": 0}, False) == (
        "/v: gave 3 entries of sglang to root:root (no group or other write, no set-ID bits)")
    assert O.message("/v", "root", "root", "sglang", {"changed": 3, "others": 2}, True).startswith("/v: would give 3")
    assert O.message("/v", "root", "root", "sglang", {"changed": 0, "others": 2}, False) == (
        "/v: nothing of sglang to convert; 2 entries of other owners left as they are")
