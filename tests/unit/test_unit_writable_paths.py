# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Least privilege in the rendered units (tests/unit/snapshot, every example inventory): each server and router unit
has ProtectSystem=strict, and nothing it may write (ReadWritePaths=) holds or lies inside its venv, the install root,
its model or its chat template, which sglang_install leaves root's and read-only. The servers' writable path is
their home, where SGLang's caches go (~/.cache, ~/.triton)."""

import pathlib
import shlex

import pytest

SNAPSHOTS = pathlib.Path(__file__).resolve().parent / "snapshot"
UNITS = sorted(p for p in SNAPSHOTS.rglob("*.service") if p.name.startswith("sglang-"))


def _settings(path):
    """{key: [values]} of the unit, ExecStart joined over its continuation lines."""
    settings, pending = {}, ""
    for line in path.read_text().splitlines():
        line = pending + line
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def _inside(a, b):
    a, b = a.rstrip("/") + "/", b.rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def test_every_example_inventory_renders_units():
    assert len(UNITS) >= 6 and {p.relative_to(SNAPSHOTS).parts[0] for p in UNITS} >= {"blackwell", "local", "multinode"}


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: str(p.relative_to(SNAPSHOTS)))
def test_nothing_root_installed_is_writable_in_the_unit(unit):
    settings = _settings(unit)
    assert settings["ProtectSystem"] == ["strict"]
    words = shlex.split(settings["ExecStart"][0])
    python = next(w for w in words if w.endswith("/bin/python"))
    read_only = [python.rsplit("/bin/python", 1)[0], "/opt/sglang"]
    for flag in ("--model-path", "--chat-template"):
        if flag in words:
            read_only.append(words[words.index(flag) + 1])
    writable = [p for value in settings.get("ReadWritePaths", []) for p in value.split()]
    for path in writable:
        assert not any(_inside(path.lstrip("-"), ro) for ro in read_only), (path, read_only)
    if settings["User"] == ["sglang"]:
        # The servers' caches: their home (WorkingDirectory, HOME from the passwd entry) and nothing else.
        assert writable == settings["WorkingDirectory"] == ["/var/lib/sglang"]
    else:
        assert settings["User"] == ["sglang-router"] and writable == []
