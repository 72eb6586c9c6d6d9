# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""host/file_state.py: which files managed_files would write, judged read-only."""

import grp
import os
import pwd

from ansible_collections.pdserve.sglang.plugins.module_utils.host import file_state

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


def entry(path, content, mode="0644", owner=USER):
    return {"path": str(path), "content": content, "owner": owner, "group": GROUP, "mode": mode}


def test_an_equal_file_is_not_written(tmp_path):
    path = tmp_path / "a"
    path.write_text("x\n")
    path.chmod(0o640)
    assert file_state.files_to_write([entry(path, "x\n", "0640")]) == []


def test_content_mode_absence_and_missing_names_are_each_a_write(tmp_path):
    path = tmp_path / "a"
    path.write_text("x\n")
    path.chmod(0o640)
    files = [entry(path, "y\n", "0640"), entry(path, "x\n", "0644"), entry(tmp_path / "b", "x\n"),
             entry(tmp_path / "c" / "d", "x\n"), entry(path, "x\n", "0640", owner="pdserve-no-such-user"),
             entry(path, "x\n", "rw")]
    assert file_state.files_to_write(files) == [str(path), str(path), str(tmp_path / "b"), str(tmp_path / "c" / "d"),
                                                str(path), str(path)]


def test_missing_for_names_what_is_missing(tmp_path):
    assert file_state.missing_for(entry(tmp_path / "no" / "f", "x", owner="pdserve-no-such-user")) == [
        "owner pdserve-no-such-user does not exist", "directory %s does not exist" % (tmp_path / "no")]
    assert file_state.read_text(str(tmp_path / "absent")) is None
