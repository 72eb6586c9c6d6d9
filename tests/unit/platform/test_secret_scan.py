# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/platform/secret_scan.py: it finds a secret where one is, says where and never what."""

import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "platform", "secret_scan.py")
SECRET = "s3cret-Key-0123456789"


def scan(args, secrets):
    proc = subprocess.run([sys.executable, SCRIPT] + args, input=json.dumps(secrets), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


def test_files_mode_names_the_file_and_the_index_never_the_secret(tmp_path):
    clean, dirty = tmp_path / "clean.log", tmp_path / "dirty.log"
    clean.write_text("ok: [router] => (item=***)\n")
    dirty.write_text("changed: [router] => {\"api_key\": \"%s\"}\n" % SECRET)
    rc, out = scan(["files", str(clean), str(dirty)], ["another-secret-xx", SECRET])
    result = json.loads(out)
    assert rc == 0 and result["hits"] == [{"where": str(dirty), "secret": 1}]
    assert result["scanned"] == {"secrets": 2, "files": 2}
    assert SECRET not in out


def test_world_readable_files_only_and_processes(tmp_path):
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import secret_scan  # pylint: disable=import-outside-toplevel
    (tmp_path / "open").write_text(SECRET)
    private = tmp_path / "private"
    private.write_text(SECRET)
    private.chmod(0o600)
    (tmp_path / "open").chmod(0o644)
    # A world-readable file in a directory others cannot pass through (0700, as root's home or Ansible's temporary
    # directories) is not theirs to read; one in a directory they can pass through is.
    closed, passable = tmp_path / "closed", tmp_path / "passable"
    closed.mkdir(mode=0o700)
    passable.mkdir(mode=0o711)
    (closed / "open-inside").write_text(SECRET)
    (passable / "open-inside").write_text(SECRET)
    for path in (closed / "open-inside", passable / "open-inside"):
        path.chmod(0o644)
    closed.chmod(0o700)
    tmp_path.chmod(0o755)
    hits, count = secret_scan.scan_files([str(tmp_path)], [SECRET.encode()])
    assert sorted(h["where"] for h in hits) == [str(tmp_path / "open"), str(passable / "open-inside")] and count == 2
    tmp_path.chmod(0o700)
    assert secret_scan.scan_files([str(tmp_path)], [SECRET.encode()]) == ([], 0)
    # A process with the secret on its command line is found (this one's child).
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; print(flush=True); time.sleep(30)", SECRET],
                             stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # it runs: its command line is in place
        hits, count = secret_scan.scan_processes([SECRET.encode()])
        assert {"where": "command line of pid %d" % child.pid, "secret": 0} in hits and count > 1
    finally:
        child.kill()
        child.wait()


def test_refuses_to_look_for_nothing(tmp_path):
    rc, out = scan(["files", str(tmp_path)], ["short"])
    assert rc == 2 and "nothing to look for" in out
    rc, out = scan(["files", str(tmp_path / "absent")], [SECRET])
    assert rc == 2 and "no such file" in out
