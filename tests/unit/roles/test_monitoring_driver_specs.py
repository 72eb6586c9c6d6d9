# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Each entry point of the monitoring and nvidia_driver roles lists exactly the options it reads.

What an entry point E reads: the role-prefixed public names in tasks/E.yml and every task file it imports or includes
(transitively; a templated file name matches every file it can name), in the templates those files render, and,
transitively, in the vars/main.yml and defaults/main.yml entries those texts name (and the vars/<os>.yml files the
tasks include). Comments are not reads; a name after a dot is a module or filter, not a variable.

The role's Python also reads one name from every host's hostvars (the filter monitoring_settings:
monitoring_exporter_host): an entry point that reads _monitoring_settings reads it.

The main entry point must also document every default (tests/unit/test_argument_specs.py): there the rule is one way,
every name main reads is an option of main.
"""

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
ROLES = ("monitoring", "nvidia_driver")
_INCLUDE = re.compile(r"(?:import_tasks|include_tasks):\s*(?:\n\s+file:\s*)?[\"']?([^\"'\n]+?)[\"']?\s*$", re.M)
_TEMPLATE = re.compile(r"[\"']?([A-Za-z0-9_.-]+\.j2)[\"']?")
_JINJA = re.compile(r"\{\{.*?\}\}")
# Names the role's filters read from hostvars, and the private value through which an entry point reads them.
HOSTVARS = {"monitoring": ("_monitoring_settings", {"monitoring_exporter_host"})}


def _strip_comments(text):
    """YAML comments out (a '#' at a line's start or after a space, outside quotes is good enough here)."""
    out = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continue
        out.append(re.sub(r"\s+#\s.*$", "", line) if "'#'" not in line and '"#"' not in line else line)
    return "\n".join(out)


def _names(text, role):
    pattern = re.compile(r"(?<![A-Za-z0-9_.])(_{0,2}%s_[a-z0-9_]+)" % re.escape(role))
    return set(pattern.findall(text))


def _entries(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _raw_entries(path):
    """{top-level key: its text} of a flat YAML file."""
    found = {}
    key = None
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):", line)
        if match:
            key = match.group(1)
            found[key] = line[len(key) + 1:]
        elif key is not None:
            found[key] += "\n" + line
    return dict((k, _strip_comments(v)) for k, v in found.items())


def _task_files(role_dir, entry):
    """The task files entry point ``entry`` runs, and their text without comments."""
    todo = [role_dir / "tasks" / ("%s.yml" % entry)]
    seen = {}
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = _strip_comments(path.read_text(encoding="utf-8"))
        for name in _INCLUDE.findall(seen[path]):
            pattern = _JINJA.sub("*", name.strip())
            todo.extend(sorted((role_dir / "tasks").glob(pattern)))
    return seen


def reads(role, entry):
    """The role-prefixed public names entry point ``entry`` of ``role`` reads."""
    role_dir = ROOT / "roles" / role
    texts = list(_task_files(role_dir, entry).values())
    for name in set(n for t in texts for n in _TEMPLATE.findall(t)):
        path = role_dir / "templates" / name
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8"))
    variables = _raw_entries(role_dir / "vars" / "main.yml")
    if any("include_vars" in t for t in texts):
        for path in sorted((role_dir / "vars").glob("*.yml")):
            if path.name != "main.yml":
                texts.append(_strip_comments(path.read_text(encoding="utf-8")))
    defaults = _raw_entries(role_dir / "defaults" / "main.yml")
    names = set()
    for text in texts:
        names |= _names(text, role)
    done = set()
    while names - done:
        name = sorted(names - done)[0]
        done.add(name)
        text = variables.get(name) if name.startswith("_") else defaults.get(name)
        if text:
            names |= _names(text, role)
            for template in _TEMPLATE.findall(text):
                path = role_dir / "templates" / template
                if path.is_file():
                    names |= _names(path.read_text(encoding="utf-8"), role)
    through, extra = HOSTVARS.get(role, ("", set()))
    if through in names:
        names |= extra
    return set(n for n in names if not n.startswith("_"))


def _specs(role):
    return _entries(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]


CASES = [(role, entry) for role in ROLES for entry in sorted(_specs(role))]


@pytest.mark.parametrize("role,entry", CASES, ids=["%s:%s" % c for c in CASES])
def test_entry_point_reads_only_its_options(role, entry):
    options = set((_specs(role)[entry].get("options") or {}))
    read = reads(role, entry)
    missing = sorted(read - options)
    assert not missing, "%s:%s reads names that are not its options: %s" % (role, entry, missing)
    if entry != "main":
        unread = sorted(options - read)
        assert not unread, "%s:%s has options it does not read: %s" % (role, entry, unread)


@pytest.mark.parametrize("role", ROLES)
def test_every_entry_point_has_a_task_file(role):
    for entry in _specs(role):
        assert (ROOT / "roles" / role / "tasks" / ("%s.yml" % entry)).is_file(), "%s:%s" % (role, entry)


@pytest.mark.parametrize("role", ROLES)
def test_an_option_is_written_once(role):
    """The entry points share an option's text through a YAML anchor, never a copy of it."""
    text = (ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8")
    descriptions = re.findall(r"^ {6}[a-z0-9_]+:\n {8}description: (.+)$", text, re.M)
    repeated = sorted(set(d for d in descriptions if descriptions.count(d) > 1))
    assert not repeated, "%s: option texts copied between entry points: %s" % (role, repeated)
