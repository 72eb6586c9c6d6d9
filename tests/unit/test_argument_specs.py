# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every role's meta/argument_specs.yml and defaults/main.yml agree (prometheus.prometheus style).

- every default is documented as an option of an entry point, with the same default value in every entry point that
  lists it (which entry points list which option: tests/unit/test_entry_point_specs.py);
- every option without a default in defaults/main.yml is required or has no default (a value another role owns,
  such as those of pdserve.sglang.sglang_defaults, is documented without restating its default);
- every option has a type and a description.
"""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta").is_dir())


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _entries(role):
    return _load(role / "meta" / "argument_specs.yml")["argument_specs"]


def _options(role):
    """[(entry point, option, its spec)] of every entry point."""
    return [(entry, name, opt) for entry, spec in _entries(role).items() for name, opt in (spec.get("options") or {}).items()]


def test_roles_found():
    names = [r.name for r in ROLES]
    assert "sglang_server" in names and "sglang_router" in names


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_every_role_has_spec_and_defaults(role):
    assert (role / "meta" / "argument_specs.yml").is_file(), "%s has no meta/argument_specs.yml" % role.name
    assert (role / "defaults" / "main.yml").is_file(), "%s has no defaults/main.yml" % role.name


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_defaults_are_documented_with_the_same_value(role):
    defaults = _load(role / "defaults" / "main.yml")
    options = _options(role)
    undocumented = sorted(set(defaults) - set(name for _entry, name, _opt in options))
    assert not undocumented, "%s: defaults missing from argument_specs: %s" % (role.name, undocumented)
    differing = sorted(
        (entry, name, defaults[name], opt.get("default"))
        for entry, name, opt in options
        if name in defaults and opt.get("default") != defaults[name]
    )
    assert not differing, "%s: default in defaults/main.yml vs argument_specs: %s" % (role.name, differing)


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_options_without_defaults_are_required(role):
    defaults = _load(role / "defaults" / "main.yml")
    loose = sorted(
        "%s %s" % (entry, name) for entry, name, opt in _options(role)
        if name not in defaults and not opt.get("required") and "default" in opt and opt["default"] is not None
    )
    assert not loose, "%s: options with a spec default but none in defaults/main.yml: %s" % (role.name, loose)


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_options_have_type_and_description(role):
    bad = sorted("%s %s" % (entry, name) for entry, name, opt in _options(role) if not opt.get("type") or not opt.get("description"))
    assert not bad, "%s: options without type or description: %s" % (role.name, bad)


# Switches site.yml reads before it includes a role that cannot own them, and the monitoring values the host firewall
# reads too (they keep that role's name).
SHARED_FOREIGN_NAMES = {"nvidia_driver_enabled", "monitoring_group", "monitoring_gpu_group", "monitoring_node_exporter_port",
                        "monitoring_gpu_exporter_port"}


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_public_variables_are_role_prefixed(role):
    # sglang_defaults owns the values several roles share: they carry the collection's prefix, not a role's.
    prefix = "sglang_" if role.name == "sglang_defaults" else role.name + "_"
    allowed = SHARED_FOREIGN_NAMES if role.name == "sglang_defaults" else set()
    bad = sorted(set(name for _entry, name, _opt in _options(role) if not name.startswith(prefix) and name not in allowed))
    assert not bad, "%s: options not prefixed with the role name: %s" % (role.name, bad)


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_every_entry_point_a_playbook_includes_has_a_spec(role):
    """tasks_from: X in playbooks and roles needs argument_specs entry X."""
    import re
    entries = set(_load(role / "meta" / "argument_specs.yml")["argument_specs"])
    used = set()
    for path in list(ROOT.glob("playbooks/*.yml")) + list(ROOT.glob("roles/*/tasks/*.yml")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"name: pdserve\.sglang\.%s\s*\n\s*tasks_from: (\w+)" % role.name, text):
            used.add(match.group(1))
    assert used <= entries, "%s: entry points used without an argument spec: %s" % (role.name, sorted(used - entries))
