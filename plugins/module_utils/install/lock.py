# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""pip locks with hashes: read one, find the one a venv installs from, and judge it against what the role is asked.

A lock is a requirements file in which every line is ``name==version`` with at least one ``--hash=sha256:...``
(``scripts/lock.sh`` writes them with ``uv pip compile --generate-hashes``). The sglang_install role installs a venv
with ``pip install --require-hashes --no-deps -r <lock>``: the lock is the whole set, and pip refuses any file whose
hash it does not list. What pip cannot do before it starts is judged here, in the preflight: the lock must pin every
requirement the role is asked to install, at that version, and must not install SGLang or NIXL where they come from
elsewhere (a git tree, a source build).
"""

import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem

VARIABLE = "sglang_install_pip_lock"
# The values of sglang_install_pip_lock that are not a path.
SHIPPED = "shipped"
WITHOUT_HASHES = "without-hashes"
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*(?P<version>[A-Za-z0-9.!+_-]+)")
_HASH = re.compile(r"--hash[=\s]+(?P<alg>sha256|sha384|sha512):(?P<digest>[0-9a-fA-F]+)")
_DIGEST_LENGTH = {"sha256": 64, "sha384": 96, "sha512": 128}
GENERATE = "bash scripts/lock.sh"


def canonical(name: str) -> str:
    """PEP 503's normalised project name."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def _logical_lines(text: str) -> List[str]:
    """Lines with backslash continuations joined and comments dropped (a comment starts at `` #`` or a line's start)."""
    lines, pending = [], ""
    for raw in str(text or "").splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            lines.append(line)
    if pending.strip():
        lines.append(re.sub(r"(^|\s)#.*$", "", pending).strip())
    return [line for line in lines if line]


def parse(text: str) -> Dict[str, Any]:
    """``{pins: {canonical name: {name, version, hashes, marker}}, errors: [text]}`` of a lock's text.

    Every requirement must be a plain pin with at least one well-formed hash; options (``--index-url``, ``-r``, ...)
    are refused, since a lock that brings its own sources or includes another file is not the whole set."""
    pins: Dict[str, Dict[str, Any]] = {}
    errors: List[str] = []
    for line in _logical_lines(text):
        if line.startswith("-"):
            errors.append("%s: options are not allowed in a lock (only name==version --hash=... lines)" % line.split()[0])
            continue
        requirement, rest = line.partition(" --")[::2]
        rest = ("--" + rest) if rest else ""
        requirement, marker = requirement.partition(";")[::2]
        match = _PIN.fullmatch(requirement.strip())
        if not match:
            errors.append("%s is not pinned as name==version" % requirement.strip())
            continue
        name, version = match.group("name"), match.group("version")
        hashes = []
        for found in _HASH.finditer(rest):
            alg, digest = found.group("alg"), found.group("digest").lower()
            if len(digest) != _DIGEST_LENGTH[alg]:
                errors.append("%s==%s: %s:%s is not a %s digest" % (name, version, alg, digest, alg))
                continue
            hashes.append("%s:%s" % (alg, digest))
        leftover = _HASH.sub("", rest).strip()
        if leftover:
            errors.append("%s==%s: unexpected %s (only --hash options may follow a pin)" % (name, version, leftover.split()[0]))
        if not hashes:
            errors.append("%s==%s has no --hash" % (name, version))
            continue
        key = canonical(name)
        if key in pins:
            errors.append("%s is pinned twice (%s and %s)" % (name, pins[key]["version"], version))
            continue
        pins[key] = {"name": name, "version": version, "hashes": hashes, "marker": marker.strip()}
    if not pins and not errors:
        errors.append("pins nothing")
    return {"pins": pins, "errors": errors}


def shipped_name(profile: str, python_version: str) -> str:
    """The file name of a lock for a profile and a Python (major.minor) in a lock directory."""
    return "%s-py%s.lock" % (profile, python_version)


def resolve(value: str, shipped_dir: str, profile: str, python_version: Optional[str]) -> Dict[str, Any]:
    """Which lock a venv installs from: ``{mode, path, error}``; mode is ``hashes`` or ``without-hashes``.

    ``shipped`` is the directory of locks the collection ships; a directory holds ``<profile>-py<X.Y>.lock`` files
    (``<profile>.lock`` for any Python); a file is the lock itself."""
    value = str(value if value is not None else "").strip()
    if value == WITHOUT_HASHES:
        return {"mode": WITHOUT_HASHES, "path": "", "error": ""}
    if not value:
        return {"mode": "hashes", "path": "", "error": "is empty"}
    directory = shipped_dir if value == SHIPPED else value
    if value != SHIPPED and not os.path.isabs(value):
        return {"mode": "hashes", "path": "", "error": "%r is neither shipped, %s nor an absolute path on the controller" % (
            value, WITHOUT_HASHES)}
    if value != SHIPPED and not os.path.isdir(value):
        if os.path.isfile(value):
            return {"mode": "hashes", "path": value, "error": ""}
        return {"mode": "hashes", "path": "", "error": "%s does not exist on the controller" % value}
    names = ([shipped_name(profile, python_version)] if python_version else []) + ["%s.lock" % profile]
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return {"mode": "hashes", "path": path, "error": ""}
    try:
        have = sorted(n for n in os.listdir(directory) if n.endswith(".lock"))
    except OSError:
        have = []
    what = "the collection ships" if value == SHIPPED else "%s holds" % directory
    return {"mode": "hashes", "path": "", "error": "%s no lock for profile %s on Python %s (looked for %s; there are: %s)" % (
        what, profile, python_version or "?", " or ".join(names), ", ".join(have) or "none")}


_CACHE: Dict[Any, Dict[str, Any]] = {}


def load(path: str) -> Dict[str, Any]:
    """:func:`parse` of the file at ``path`` (cached by path, size and modification time: the role asks often)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return {"pins": {}, "errors": ["cannot be read: %s" % exc]}
    key = (path, info.st_size, info.st_mtime_ns)
    if key not in _CACHE:
        try:
            with open(path, encoding="utf-8") as handle:
                _CACHE[key] = parse(handle.read())
        except (OSError, UnicodeDecodeError) as exc:
            return {"pins": {}, "errors": ["cannot be read: %s" % exc]}
    return _CACHE[key]


def _wanted(requirement: str):
    """``(name, version or None, text)`` of a requirement the role is asked to install; version None: not a plain pin."""
    text = str(requirement).strip()
    match = _PIN.fullmatch(text)
    if match:
        return match.group("name"), match.group("version"), text
    name = _NAME.match(text)
    return (name.group(0) if name else text), None, text


def _version_matches(want: str, have: str) -> bool:
    """PEP 440 for ``==``: a pin without a local label is met by that version with any local label."""
    return have == want or ("+" not in want and have.split("+", 1)[0] == want)


def _specifier_matches(text: str, version: str) -> Optional[bool]:
    """Whether ``version`` meets a requirement that is not a plain pin; None when that cannot be told here."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import InvalidVersion
    except ImportError:  # pragma: no cover - ansible-core brings packaging
        return None
    try:
        parsed = Requirement(text)
    except InvalidRequirement:
        return None
    if parsed.url:
        return False
    try:
        return parsed.specifier.contains(version, prereleases=True)
    except InvalidVersion:
        return None


def judge(host: Any, lock: Dict[str, Any], requirements: List[str], label: str,
          not_from_lock: Dict[str, str]) -> List[Dict[str, Any]]:
    """Problems of a lock (``parse`` result) for a venv asked to hold ``requirements``.

    ``not_from_lock`` maps a project name to why the lock must not pin it (SGLang from a git tree, NIXL built from
    source): installing the lock would replace it."""
    found = []

    def add(message, fix):
        found.append(problem(host, VARIABLE, "%s %s" % (label, message), fix))

    regenerate = ("regenerate the lock for these pins (%s, README \"Locked installs\"), point %s at a lock of your own, "
                  "or set it to %s to install without hashes" % (GENERATE, VARIABLE, WITHOUT_HASHES))
    for error in lock.get("errors") or []:
        add(error, "every line of a lock is name==version with --hash=sha256:... (write it with %s)" % GENERATE)
    pins = lock.get("pins") or {}
    missing = []
    for requirement in requirements or []:
        name, version, text = _wanted(requirement)
        have = pins.get(canonical(name))
        if have is None:
            missing.append(text)
        elif version is not None and not _version_matches(version, have["version"]):
            add("pins %s==%s, and this venv is asked to install %s" % (have["name"], have["version"], text), regenerate)
        elif version is None and _specifier_matches(text, have["version"]) is False:
            add("pins %s==%s, which does not meet %s" % (have["name"], have["version"], text), regenerate)
    if missing:
        add("does not pin %s, which this venv is asked to install" % ", ".join(missing), regenerate)
    for name, why in sorted((not_from_lock or {}).items()):
        have = pins.get(canonical(name))
        if have is not None:
            add("pins %s==%s, and %s: installing the lock would replace it" % (have["name"], have["version"], why),
                "use a lock without %s (%s) or set %s to %s" % (have["name"], GENERATE, VARIABLE, WITHOUT_HASHES))
    return found


def requirements(lock: Dict[str, Any]) -> List[str]:
    """``name==version`` of every pin without an environment marker (what install_facts can tell met), sorted."""
    return sorted("%s==%s" % (pin["name"], pin["version"]) for pin in (lock.get("pins") or {}).values() if not pin.get("marker"))
