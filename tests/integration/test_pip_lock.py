# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the preflight leaves to pip: the hash. The role's locked install (`pip install --require-hashes --no-deps -r
<lock>`, from a wheelhouse) installs a wheel whose hash the lock lists, and refuses the same wheel once one byte of it
changed, or a wheel the lock does not list; the generator's parser accepts the lock the test writes."""

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from ansible_collections.pdserve.sglang.plugins.module_utils.install import lock as L


def _wheel(directory: Path, name: str, version: str) -> Path:
    """A minimal, valid pure-Python wheel."""
    path = directory / ("%s-%s-py3-none-any.whl" % (name, version))
    dist = "%s-%s.dist-info" % (name, version)
    files = {
        "%s.py" % name: "VERSION = %r\n" % version,
        "%s/METADATA" % dist: "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
        "%s/WHEEL" % dist: "Wheel-Version: 1.0\nGenerator: pdserve-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join("%s,,\n" % name for name in files) + "%s/RECORD,,\n" % dist
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in files.items():
            zf.writestr(member, text)
        zf.writestr("%s/RECORD" % dist, record)
    return path


def _pip(wheelhouse: Path, lock: Path, target: Path):
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--isolated", "--no-index", "--find-links",
         str(wheelhouse), "--require-hashes", "--no-deps", "--target", str(target), "-r", str(lock)],
        capture_output=True, text=True, timeout=300, check=False)


def test_pip_installs_the_locked_wheel_and_refuses_a_tampered_one(tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    wheel = _wheel(wheelhouse, "pdserve_locked", "1.0")
    lock = tmp_path / "servers-py3.11.lock"
    lock.write_text("pdserve-locked==1.0 \\\n    --hash=sha256:%s\n" % hashlib.sha256(wheel.read_bytes()).hexdigest())
    assert L.parse(lock.read_text())["errors"] == []

    good = _pip(wheelhouse, lock, tmp_path / "good")
    assert good.returncode == 0, good.stdout + good.stderr
    assert (tmp_path / "good" / "pdserve_locked.py").is_file()

    with open(wheel, "ab") as handle:  # one byte more: a different file with the same name
        handle.write(b"\0")
    bad = _pip(wheelhouse, lock, tmp_path / "bad")
    assert bad.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE" in bad.stderr, bad.stderr
    assert not (tmp_path / "bad" / "pdserve_locked.py").exists()


def test_pip_refuses_a_lock_entry_without_a_hash(tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    wheel = _wheel(wheelhouse, "pdserve_locked", "1.0")
    _wheel(wheelhouse, "pdserve_other", "2.0")
    lock = tmp_path / "lock"
    lock.write_text("pdserve-locked==1.0 --hash=sha256:%s\npdserve-other==2.0\n" % hashlib.sha256(wheel.read_bytes()).hexdigest())
    assert L.parse(lock.read_text())["errors"] == ["pdserve-other==2.0 has no --hash"]
    result = _pip(wheelhouse, lock, tmp_path / "t")
    assert result.returncode != 0 and "Hashes are required in --require-hashes mode" in result.stderr, result.stderr
