# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The release notes: the fragments lint clean and render into the next release's section.

The release is rendered in a temporary copy of the collection, never in this tree: releasing consumes the
fragments (keep_fragments: false) and others add fragments while the release is being prepared.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
CHANGELOG_TOOL = BIN / "antsibull-changelog"
FRAGMENTS = ROOT / "changelogs" / "fragments"
# The next release is the version galaxy.yml names.
VERSION = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
DATE = "2026-12-01"
VERSION_ADDED = re.compile(r"^\s*version_added:\s*['\"]?([0-9.]+)['\"]?\s*$", re.M)


def _env() -> dict:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PATH="%s%s%s" % (BIN, os.pathsep, os.environ.get("PATH", "")))
    env.pop("ANSIBLE_CONFIG", None)
    return env


def _run(argv: list, cwd: pathlib.Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)


def _words(text: str) -> str:
    return " ".join(text.split())


def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


def _fragments() -> dict:
    return {path.name: yaml.safe_load(path.read_text()) for path in sorted(FRAGMENTS.glob("*.yml"))}


def _sections() -> dict:
    """Section key -> title, from changelogs/config.yaml."""
    config = yaml.safe_load((ROOT / "changelogs" / "config.yaml").read_text())
    titles = dict((key, title) for key, title in config["sections"])
    titles[config["prelude_section_name"]] = config["prelude_section_title"]
    return titles


def _release_section(rst: str, version: str) -> str:
    """The text of one release's section of a rendered CHANGELOG.rst."""
    match = re.search(r"^v%s\n=+\n(.*?)(?=^v[0-9][^\n]*\n=+\n|\Z)" % re.escape(version), rst, re.M | re.S)
    assert match, "no v%s section in the rendered changelog:\n%s" % (version, rst[:2000])
    return match.group(1)


def _added(directory: str, pattern: str) -> dict:
    """Plugin name -> version_added, for the plugins of one directory."""
    found = {}
    for path in sorted((ROOT / "plugins" / directory).glob(pattern)):
        match = VERSION_ADDED.search(path.read_text())
        assert match, "%s has no version_added" % path.relative_to(ROOT)
        found[path.name.split(".")[0]] = match.group(1)
    return found


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> str:
    """The CHANGELOG.rst that releasing VERSION writes, in a copy of the collection."""
    copy = tmp_path_factory.mktemp("release") / "ansible_collections" / "pdserve" / "sglang"
    copy.mkdir(parents=True)
    shutil.copy2(str(ROOT / "galaxy.yml"), str(copy / "galaxy.yml"))
    shutil.copytree(str(ROOT / "changelogs"), str(copy / "changelogs"),
                    ignore=shutil.ignore_patterns(".plugin-cache.yaml"))
    # The plugins and runtime metadata, so the release lists the plugins new in it (from their version_added).
    shutil.copytree(str(ROOT / "plugins"), str(copy / "plugins"), ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(str(ROOT / "meta"), str(copy / "meta"))
    env = dict(_env(), ANSIBLE_COLLECTIONS_PATH=str(copy.parents[2]))
    proc = _run([CHANGELOG_TOOL, "release", "--version", VERSION, "--date", DATE], copy, env)
    assert proc.returncode == 0, proc.stdout
    return (copy / "CHANGELOG.rst").read_text()


def test_fragments_lint_clean():
    proc = _run([CHANGELOG_TOOL, "lint"], ROOT, _env())
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout


def test_next_release_is_not_released_yet():
    releases = yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text()).get("releases") or {}
    assert VERSION not in releases, "galaxy.yml's version %s is already released: raise it" % VERSION


def test_release_section_holds_every_fragment(rendered):
    section = _words(_release_section(rendered, VERSION))
    titles = _sections()
    missing = []
    for name, fragment in _fragments().items():
        for key, entries in fragment.items():
            if key == "trivial":
                continue
            assert key in titles, "%s: unknown section %s" % (name, key)
            assert _words(titles[key]) in section, "%s: no %r section" % (name, titles[key])
            for entry in [entries] if isinstance(entries, str) else entries:
                if _words(entry) not in section:
                    missing.append("%s (%s): %s" % (name, key, entry[:80]))
    assert not missing, missing


def test_release_section_leaves_trivial_entries_out(rendered):
    section = _words(_release_section(rendered, VERSION))
    shown = [entry[:80] for fragment in _fragments().values() for entry in fragment.get("trivial", [])
             if _words(entry) in section]
    assert not shown, shown


def test_no_plugin_is_added_after_the_next_release():
    added = dict(_added("modules", "*.py"))
    added.update(_added("filter", "*.yml"))
    added.update(_added("callback", "*.py"))
    later = dict((name, version) for name, version in added.items() if _version(version) > _version(VERSION))
    assert not later, "version_added after galaxy.yml's %s: %s" % (VERSION, later)


def test_release_section_lists_the_plugins_new_in_it(rendered):
    section = _release_section(rendered, VERSION)
    new = dict(_added("modules", "*.py"))
    new.update(_added("filter", "*.yml"))
    listed = set(re.findall(r"^- pdserve\.sglang\.(\w+) - ", section, re.M))
    missing = sorted(name for name, version in new.items() if version == VERSION and name not in listed)
    assert not missing, missing
