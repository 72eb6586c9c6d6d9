# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Each entry point's argument spec lists exactly the role's public variables that entry point reads.

For an entry point E of a role R, what E reads is found in text: tasks/E.yml, every task file of R it includes or
imports with a literal file name (transitively), and, transitively, the entries of R's vars/main.yml and
defaults/main.yml that those texts name. In that text a variable of R is a name ``R_[a-z0-9_]+`` that does not
start with ``_`` (private values and registered results), is not an attribute or a plugin name (preceded by
``.``), not a file the role ships (followed by ``.sh``, ``.py``, ...) and not a prefix (ending in ``_``); comment
lines are not read. Then
(a) every variable E reads is an option of E: one that is not would never be validated, and
(b) every option of E is read by E: a copied block of options that E never reads documents nothing.
``main`` reads tasks/main.yml. A role without tasks/main.yml (pdserve.sglang.sglang_defaults, and
pdserve.sglang.sglang_operations, which is used through its entry points only) documents all its defaults in ``main``.
"""

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())
INCLUDE = re.compile(r"""(?:include_tasks|import_tasks):\s*(?:\n\s*file:\s*)?["']?([A-Za-z0-9_./-]+\.ya?ml)["']?\s*$""",
                     re.M)
# A name, not an attribute or plugin (after "."), nor a file the role ships (sglang_install_run.sh).
NAME = re.compile(r"(?<![A-Za-z0-9_.])_*[A-Za-z][A-Za-z0-9_]*(?![A-Za-z0-9_]|\.(?:sh|py|ya?ml|j2|json)\b)")


def _load(path):
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _text(path):
    """A task file without its comment lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def task_files(role, entry):
    """tasks/<entry>.yml and the task files it includes or imports by literal name, transitively."""
    seen = []
    todo = [role / "tasks" / ("%s.yml" % entry)]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        for name in INCLUDE.findall(_text(path)):
            todo.append(role / "tasks" / name)
    return seen


def read_by(role, entry):
    """The public variables of ``role`` that ``entry`` reads (see the module docstring)."""
    prefix = role.name + "_"
    entries = dict(_load(role / "defaults" / "main.yml"))
    entries.update(_load(role / "vars" / "main.yml"))
    texts = [_text(path) for path in task_files(role, entry)]
    names, expanded = set(), set()
    while texts:
        for name in NAME.findall(texts.pop()):
            names.add(name)
            if name in entries and name not in expanded:
                expanded.add(name)
                texts.append(yaml.safe_dump(entries[name]))
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
    if entry == "main" and not (role / "tasks" / "main.yml").is_file():
        missing = sorted(set(_load(role / "defaults" / "main.yml")) - options)
        assert not missing, "%s: defaults not listed by main: %s" % (role.name, missing)
        return
    assert (role / "tasks" / ("%s.yml" % entry)).is_file(), "%s: entry point %s has no tasks/%s.yml" % (role.name, entry, entry)
    read = set(read_by(role, entry))
    missing = sorted(read - options)
    assert not missing, "%s %s: reads variables that are not its options (never validated): %s" % (role.name, entry, missing)
    unread = sorted(options - read)
    assert not unread, "%s %s: options it never reads: %s" % (role.name, entry, unread)


def test_reads_follow_includes_vars_and_defaults():
    role = ROOT / "roles" / "sglang_install"
    names = [p.name for p in task_files(role, "builds")]
    assert names[0] == "builds.yml" and {"preflight.yml", "kernels.yml", "kernel_build.yml", "job.yml"} <= set(names)
    # builds reads the build settings through tasks, and the user through vars/main.yml's settings.
    read = read_by(role, "builds")
    assert "sglang_install_build_timeout" in read and "sglang_install_user" in read
    assert not any(name.startswith("_") for name in read)
