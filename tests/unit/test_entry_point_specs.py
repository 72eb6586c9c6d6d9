# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Each entry point's argument spec lists exactly the role's public variables that entry point reads. For an entry
point E of a role R, what E reads is found in text: tasks/E.yml, every task file of R it includes or imports
(transitively; a templated file name matches every file it can name), the templates those files render, the
vars/<os>.yml files where they include vars, and, transitively, the entries of R's vars/main.yml and
defaults/main.yml that those texts name (and HOSTVARS: names R's Python reads from every host). In that text a
variable of R is a name ``R_[a-z0-9_]+`` that does not start with ``_`` (private values and registered results), is
not an attribute or a plugin name (preceded by ``.``), not a file the role ships (followed by ``.sh``, ``.py``, ...)
and not a prefix (ending in ``_``); comment lines are not read. Then
(a) every variable E reads is an option of E: one that is not would never be validated, and
(b) every option of E is read by E: a copied block of options that E never reads documents nothing; except for
    ``main``, which documents every default (tests/unit/test_argument_specs.py).
``main`` reads tasks/main.yml. A role without tasks/main.yml documents all its defaults in one entry point:
pdserve.sglang.sglang_operations (used through its entry points only) in ``main``, pdserve.sglang.sglang_defaults
(its defaults only) in ``check``, which the playbooks run once per run (playbooks/shared_values.yml).
"""

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())
INCLUDE = re.compile(r"(?:import_tasks|include_tasks):\s*(?:\n\s+file:\s*)?[\"']?([^\"'\n]+?)[\"']?\s*$", re.M)
TEMPLATE = re.compile(r"[\"']?([A-Za-z0-9_.-]+\.j2)[\"']?")
JINJA = re.compile(r"\{\{.*?\}\}")
# A name, not an attribute or plugin (after "."), nor a file the role ships (sglang_install_run.sh).
NAME = re.compile(r"(?<![A-Za-z0-9_.])_*[A-Za-z][A-Za-z0-9_]*(?![A-Za-z0-9_]|\.(?:sh|py|ya?ml|j2|json)\b)")
# Names a role's Python reads from every host's hostvars, and the private value through which an entry point reads
# them (the filter monitoring_settings reads monitoring_exporter_host of each host; firewall_plan the peers' addresses).
HOSTVARS = {"monitoring": ("_monitoring_settings", {"monitoring_exporter_host"}),
            "sglang_firewall": ("_sglang_firewall_plan", {"sglang_firewall_host_addresses"})}


def _load(path):
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _text(path):
    """A file without its comment lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def task_files(role, entry):
    """tasks/<entry>.yml and the task files it includes or imports, transitively (a templated file name matches every
    file it can name)."""
    seen = []
    todo = [role / "tasks" / ("%s.yml" % entry)]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        for name in INCLUDE.findall(_text(path)):
            todo.extend(sorted((role / "tasks").glob(JINJA.sub("*", name.strip()))))
    return seen


def _templates(role, text):
    return [_text(role / "templates" / name) for name in TEMPLATE.findall(text) if (role / "templates" / name).is_file()]


def read_by(role, entry):
    """The public variables of ``role`` that ``entry`` reads (see the module docstring)."""
    prefix = role.name + "_"
    entries = dict(_load(role / "defaults" / "main.yml"))
    entries.update(_load(role / "vars" / "main.yml"))
    texts = [_text(path) for path in task_files(role, entry)]
    texts += [t for text in list(texts) for t in _templates(role, text)]
    if any("include_vars" in t for t in texts):
        texts += [_text(path) for path in sorted((role / "vars").glob("*.yml")) if path.name != "main.yml"]
    names, expanded = set(), set()
    while texts:
        text = texts.pop()
        texts += _templates(role, text) if text not in expanded else []
        for name in NAME.findall(text):
            names.add(name)
            if name in entries and name not in expanded:
                expanded.add(name)
                texts.append(yaml.safe_dump(entries[name]))
    through, extra = HOSTVARS.get(role.name, ("", set()))
    if through in names:
        names |= extra
    # A name ending in "_" is a prefix someone matches against, not a variable.
    return sorted(n for n in names if n.startswith(prefix) and re.match(r"^[a-z0-9_]*[a-z0-9]$", n))


def _cases():
    for role in ROLES:
        specs = _load(role / "meta" / "argument_specs.yml")["argument_specs"]
        for entry in sorted(specs):
            yield pytest.param(role, entry, id="%s-%s" % (role.name, entry))


@pytest.mark.parametrize("role,entry", list(_cases()))
def test_entry_point_options_are_what_it_reads(role, entry):
    options = set((_load(role / "meta" / "argument_specs.yml")["argument_specs"][entry].get("options") or {}))
    if entry in ("main", "check") and not (role / "tasks" / "main.yml").is_file():
        missing = sorted(set(_load(role / "defaults" / "main.yml")) - options)
        assert not missing, "%s: defaults not listed by %s: %s" % (role.name, entry, missing)
        return
    assert (role / "tasks" / ("%s.yml" % entry)).is_file(), "%s: entry point %s has no tasks/%s.yml" % (role.name, entry, entry)
    read = set(read_by(role, entry))
    missing = sorted(read - options)
    assert not missing, "%s %s: reads variables that are not its options (never validated): %s" % (role.name, entry, missing)
    if entry != "main":
        # main documents every default (tests/unit/test_argument_specs.py): there the rule is one way.
        unread = sorted(options - read)
        assert not unread, "%s %s: options it never reads: %s" % (role.name, entry, unread)


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_an_option_is_written_once(role):
    """Entry points share an option's text through a YAML anchor, never a copy of it."""
    text = (role / "meta" / "argument_specs.yml").read_text(encoding="utf-8")
    descriptions = re.findall(r"^ {6}[a-z0-9_]+:\n {8}description: (.+)$", text, re.M)
    repeated = sorted(set(d for d in descriptions if descriptions.count(d) > 1))
    assert not repeated, "%s: option texts copied between entry points: %s" % (role.name, repeated)


def test_reads_follow_includes_vars_and_defaults():
    role = ROOT / "roles" / "sglang_install"
    names = [p.name for p in task_files(role, "builds")]
    assert names[0] == "builds.yml" and {"preflight.yml", "kernels.yml", "kernel_build.yml", "job.yml"} <= set(names)
    # builds reads the build settings through tasks, and the user through vars/main.yml's settings.
    read = read_by(role, "builds")
    assert "sglang_install_build_timeout" in read and "sglang_install_user" in read
    assert not any(name.startswith("_") for name in read)
