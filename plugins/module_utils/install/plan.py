# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The sglang_install role's decisions and its preflight judgement, from its settings and the host's facts.

Pure: ``plan(host, settings, facts)`` takes the role's settings (its ``sglang_install_*`` variables without the
prefix) and the result of the ``install_facts`` module, and returns what the role does (where NIXL comes from,
the builds, whether CUDA and git are needed) and the problems that stop it, as ``{host, variable, message,
fix}``. The decisions never depend on whether the problems are looked at: skipping the preflight changes
nothing about what is installed.
"""

import posixpath
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.install import lock as pip_lock
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem, report, unique

PREFIX = "sglang_install_"
BUILD_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
NETWORK_URL_RE = re.compile(r"^(https?|git|ssh)://")
NIXL_SOURCES = ("auto", "pypi", "source", "none")
# What a venv is for: the model servers' (everything the settings say) or the router's (sglang-router alone).
PROFILES = ("servers", "router")
# The router's venv holds sglang-router and its few dependencies: a few hundred MB.
ROUTER_MIN_FREE_GB = 1
# Kernel builds leave their wheels in this directory (an environment variable of the build); root installs them.
WHEEL_DIR_VAR = "PDSERVE_WHEEL_DIR"
DEFAULT_BUILD_EXAMPLE = 'python -m pip wheel --no-build-isolation --no-deps -w "$PDSERVE_WHEEL_DIR" .'
# Bits of root's umask that would leave what root installs unreadable (or not executable) to the services.
UMASK_HIDES = 0o055
# pip's --retries and --timeout: beyond these a dead index holds a run for hours (pip backs off 0.25 s x 2^n between
# retries, at most 120 s each, and waits --timeout for each answer).
MAX_PIP_RETRIES = 20
MAX_PIP_TIMEOUT = 600
# Issue in which SGLang's maintainers trace NIXL_ERR_BACKEND to the pip NIXL's bundled UCX.
UCX_CONFLICT_REF = "NIXL_ERR_BACKEND, sgl-project/sglang#5709"


def _version_tuple(text):
    """``"2.36"`` -> ``(2, 36)``; None when it is not dotted numbers."""
    parts = str(text or "").strip().split(".")
    try:
        return tuple(int(part) for part in parts)
    except ValueError:
        return None


def profile(settings, name, router_venv, router_version, router_smg_version=""):
    """The settings an install profile installs with (``profile`` added).

    ``servers``: the settings as they are (the model servers' venv). ``router``: sglang-router ``router_version`` and
    smg ``router_smg_version`` (the two router implementations, side by side: sglang_router_implementation picks the
    one the unit starts) alone into ``router_venv``: no SGLang, torch, NIXL, extra packages, kernel builds, model or
    chat template, and a small free-space minimum for the venv. The other settings (user, interpreter, package
    sources) stay as they are.
    """
    if name not in PROFILES:
        raise ValueError("sglang_install_profile: %r is not one of %s" % (name, ", ".join(PROFILES)))
    s = dict(settings or {})
    if name == "router":
        s.update(venv=router_venv, router_version=router_version, router_smg_version=router_smg_version, source="none", torch_packages=[], nixl_source="none",
                 extra_packages=[], kernel_builds=[], model_source="none", chat_template_source="none",
                 min_free_gb_venv=ROUTER_MIN_FREE_GB)
    s["profile"] = name
    return s


def nixl_mode(nixl_source: Optional[str], ucx_present: bool) -> Optional[str]:
    """pypi, source or none: ``auto`` builds against a system UCX when there is one (its bundled UCX would clash)."""
    if nixl_source == "auto":
        return "source" if ucx_present else "pypi"
    return nixl_source


def builds(settings: Dict[str, Any], mode: Optional[str]) -> List[Dict[str, Any]]:
    """The kernel builds to consider: the inventory's items (mappings only) and NIXL's when built from source."""
    items = settings.get("kernel_builds")
    items = [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
    if mode == "source" and isinstance(settings.get("nixl_build"), dict):
        items = items + [settings["nixl_build"]]
    return items


def git_users(settings: Dict[str, Any], items: List[Dict[str, Any]]) -> List[Tuple[str, str]]:
    """What asks for git, as (variable, reason) pairs (empty: git is not needed)."""
    reasons = []
    if settings.get("source") == "git":
        reasons.append(("source", "SGLang from git (sglang_install_source: git)"))
    if settings.get("chat_template_source") == "sglang":
        reasons.append(("chat_template_source", "the chat template from the SGLang tree (sglang_install_chat_template_source: sglang)"))
    nixl = settings.get("nixl_build")
    repos = _names(item for item in items if "repo" in item and item is not nixl)
    if repos:
        reasons.append(("kernel_builds", "kernel builds from git (%s)" % ", ".join(repos)))
    if any(item is nixl for item in items):
        reasons.append(("nixl_source", "NIXL built from source against the system UCX (sglang_install_nixl_source: %s)"
                        % settings.get("nixl_source")))
    return reasons


def _names(items):
    """The build items' names, each once, in order."""
    names = []
    for item in items:
        name = str(item.get("name"))
        if name not in names:
            names.append(name)
    return names


def truthy(value: Any) -> bool:
    """A YAML-ish boolean (``cuda: false``, ``"no"``, ``0``); anything else counts as true."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "off", "0", "n", "f", "")
    return bool(value)


def needs_cuda(item: Dict[str, Any]) -> bool:
    """A build item needs the CUDA toolkit unless it says ``cuda: false``."""
    return truthy(item.get("cuda", True))


def _settings_problems(host, s):
    """Settings that depend on each other."""
    found = []

    def add(var, message, fix):
        found.append(problem(host, PREFIX + var, message, fix))

    if truthy(s.get("offline", False)) and not s.get("wheelhouse"):
        add("wheelhouse", "is empty, and sglang_install_offline installs from the wheelhouse only",
            "set sglang_install_wheelhouse to a directory of wheels on the host, or sglang_install_offline to false")
    if s.get("source") == "git":
        for var in ("git_repo", "git_version"):
            if not s.get(var):
                add(var, "is empty, and sglang_install_source is git", "set the repository and the ref to check out")
    if s.get("model_source", "none") != "none" and not s.get("model_path"):
        add("model_path", "is empty, and sglang_install_model_source is %s" % s.get("model_source"),
            "set the model directory (or sglang_install_model_source: none)")
    if s.get("model_source") == "hf" and not s.get("model_repo_id"):
        add("model_repo_id", "is empty, and sglang_install_model_source is hf",
            "set the model's Hugging Face repository (org/name) and pin sglang_install_model_revision")
    if s.get("chat_template_source") == "file" and not s.get("chat_template_file"):
        add("chat_template_file", "is empty, and sglang_install_chat_template_source is file",
            "set the template file on the controller")
    if s.get("chat_template_source", "none") != "none" and not s.get("chat_template_dest"):
        add("chat_template_dest", "is empty, and a chat template is to be put in place",
            "set where --chat-template will point")
    for var in ("venv", "root"):
        value = s.get(var)
        if value is not None and not str(value).startswith("/"):
            add(var, "%r is not an absolute path" % (value,), "use an absolute path")
    found += _pip_network_problems(host, s)
    if s.get("nixl_source") not in NIXL_SOURCES:
        add("nixl_source", "%r is not one of %s" % (s.get("nixl_source"), ", ".join(NIXL_SOURCES)),
            "choose one of them")
    return found


def _number(value, kind):
    """``value`` as ``kind`` (int or float) when it is one (a bool is not), else None."""
    if isinstance(value, bool):
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        return None
    if kind is int and float(value) != number:
        return None
    return number


def _pip_network_problems(host, s):
    """pip's --retries and --timeout: bounded, so a package index that stops answering fails the run in bounded time."""
    found = []
    if "pip_retries" in s:
        retries = _number(s.get("pip_retries"), int)
        if retries is None or not 0 <= retries <= MAX_PIP_RETRIES:
            found.append(problem(host, PREFIX + "pip_retries", "%r is not a whole number from 0 to %d" % (
                s.get("pip_retries"), MAX_PIP_RETRIES),
                "set how often pip retries a request to the package index (pip's own default is 5)"))
    if "pip_timeout" in s:
        timeout = _number(s.get("pip_timeout"), float)
        if timeout is None or not 0 < timeout <= MAX_PIP_TIMEOUT:
            found.append(problem(host, PREFIX + "pip_timeout", "%r is not a number of seconds above 0 and at most %d" % (
                s.get("pip_timeout"), MAX_PIP_TIMEOUT),
                "set how long pip waits for the package index to answer one request (pip's own default is 15)"))
    return found


def _build_problems(host, s, items):
    """The kernel build items: shape, source, and unique names (the NIXL build included)."""
    found = []
    var = PREFIX + "kernel_builds"
    raw = s.get("kernel_builds")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        return [problem(host, var, "must be a list of mappings, got %r" % (raw,), "one mapping per build: {name, repo, version} or {name, src}")]
    for index, item in enumerate(raw):
        label = "%s[%s]" % (var, item.get("name") if isinstance(item, dict) and item.get("name") else index)
        if not isinstance(item, dict):
            found.append(problem(host, label, "must be a mapping, got %r" % (item,), "{name, repo, version} or {name, src}"))
            continue
        if not BUILD_NAME_RE.match(str(item.get("name") or "")):
            found.append(problem(host, label, "needs a name of letters, digits, '.', '_' and '-' (got %r)" % (item.get("name"),),
                                 "name each build; it is the directory of its checkout, log and record"))
        git = "repo" in item and "version" in item
        if git == ("src" in item) or ("repo" in item) != ("version" in item):
            found.append(problem(host, label, "needs either repo + version (a git checkout) or src (a directory on the host), not both",
                                 "set repo and version, or src"))
        if "env" in item and not isinstance(item["env"], dict):
            found.append(problem(host, label + ".env", "must be a mapping, got %r" % (item["env"],), "e.g. {NVCC_THREADS: '4'}"))
        for key in ("command", "check", "subdir"):
            if key in item and not isinstance(item[key], str):
                found.append(problem(host, "%s.%s" % (label, key), "must be a string, got %r" % (item[key],), "one shell command line"))
        if isinstance(item.get("command"), str) and WHEEL_DIR_VAR not in item["command"]:
            found.append(problem(host, label + ".command",
                                 "does not name $%s: builds run as %s, who cannot write the venv (root's); a build leaves "
                                 "wheels in $%s and the role installs them into the venv as root" % (
                                     WHEEL_DIR_VAR, s.get("build_user"), WHEEL_DIR_VAR),
                                 "build wheels there, e.g. %s" % DEFAULT_BUILD_EXAMPLE))
    names = [str(item.get("name")) for item in items if item.get("name")]
    repeated = sorted(set(name for name in names if names.count(name) > 1))
    if repeated:
        fix = "rename them; each build needs its own directory and record"
        if "nixl" in repeated and any(item is s.get("nixl_build") for item in items):
            fix += " (the name nixl is the NIXL source build's)"
        found.append(problem(host, var, "two items share a name: %s" % ", ".join(repeated), fix))
    return found


def _python_problems(host, s, facts):
    found = []
    py = facts.get("python") or {}
    python = s.get("python")
    if not py.get("found"):
        found.append(problem(host, PREFIX + "python", "cannot be run: %s" % (py.get("error") or "no answer"),
                             "set sglang_install_python to the interpreter the venv is made from"))
        return found
    versions = [str(v) for v in s.get("python_versions") or []]
    if py.get("version") not in versions:
        found.append(problem(host, PREFIX + "python",
                             "%s is Python %s; SGLang %s needs one of %s" % (python, py.get("full_version"), s.get("version"), ", ".join(versions)),
                             "set sglang_install_python to such an interpreter (or sglang_install_python_versions)"))
    if not py.get("venv"):
        found.append(problem(host, PREFIX + "python",
                             "%s is Python %s without the venv module" % (python, py.get("full_version")),
                             "install python3-venv"))
    return found


def _glibc_problems(host, s, facts):
    minimum = s.get("min_glibc")
    if s.get("source") != "pypi" or not minimum:
        return []
    libc = facts.get("libc") or {}
    have, need = _version_tuple(libc.get("version")), _version_tuple(minimum)
    if libc.get("name") == "glibc" and have is not None and need is not None and have >= need:
        return []
    return [problem(host, PREFIX + "min_glibc",
                    "%s has %s %s; the SGLang %s wheels need glibc %s or newer" % (
                        host, libc.get("name") or "an unknown libc", libc.get("version") or "", s.get("version"), minimum),
                    "use Debian 12, Ubuntu 22.04 or later, or build SGLang from source (sglang_install_source: git)")]


def _gib(value):
    """``3.0`` -> ``3``, ``2.5`` -> ``2.5``."""
    try:
        return "%g" % float(value)
    except (TypeError, ValueError):
        return str(value)


def human_size(value):
    """Bytes as people read them: ``33554432`` -> ``"32 MiB"``, ``2.5 * 2**30`` -> ``"2.5 GiB"``; ``"?"`` if unknown."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        return "?"
    for unit, scale in (("TiB", 2.0 ** 40), ("GiB", 2.0 ** 30), ("MiB", 2.0 ** 20), ("KiB", 2.0 ** 10)):
        if abs(size) >= scale:
            return "%g %s" % (round(size / scale, 1), unit)
    return "%d B" % size


def filesystem_label(entry):
    """``the filesystem mounted at /opt/x (tmpfs tmpfs, 64 MiB in all)``, from an install_facts disk entry; the
    measured path when the mount table said nothing."""
    fs = entry.get("filesystem") or {}
    if not fs.get("mount"):
        return "the filesystem of %s" % entry.get("checked")
    kind = " ".join(part for part in (fs.get("fstype"), fs.get("source")) if part)
    size = entry.get("size_bytes")
    details = ", ".join(part for part in (kind, ("%s in all" % human_size(size)) if size else "") if part)
    return "the filesystem mounted at %s%s" % (fs["mount"], (" (%s)" % details) if details else "")


def free_label(entry):
    """The free space of a disk entry: bytes when measured (the role's facts), else its rounded GiB."""
    if entry.get("free_bytes") is not None:
        return human_size(entry["free_bytes"])
    return "%s GiB" % _gib(entry.get("free_gb"))


def _disk_problems(host, facts):
    found = []
    for entry in facts.get("disk") or []:
        var = PREFIX + "min_free_gb_" + str(entry.get("name"))
        if entry.get("error"):
            found.append(problem(host, var, "cannot measure free disk for %s: %s" % (entry.get("name"), entry["error"]),
                                 "use an absolute path"))
        elif not entry.get("ok"):
            shared = entry.get("shared_with") or []
            found.append(problem(host, var, "Not enough free disk: %s at %s needs %s GiB on %s%s and has %s free" % (
                entry.get("name"), entry.get("path"), _gib(entry.get("need_gb_total")), filesystem_label(entry),
                (" (together with %s)" % ", ".join(shared)) if shared else "", free_label(entry)),
                "free space there, or lower %s" % var))
    return found


def _path(facts, path):
    return (facts.get("paths") or {}).get(path) or {}


def _host_problems(host, s, facts, mode, items):
    """What the host must have for these settings."""
    found = []
    wheelhouse = s.get("wheelhouse")
    if wheelhouse and not _path(facts, wheelhouse).get("isdir"):
        found.append(problem(host, PREFIX + "wheelhouse", "%s is not a directory on %s" % (wheelhouse, host),
                             "put the wheels there (pip download or pip wheel into it) and copy or mount it on the host"))

    ucx = facts.get("ucx") or {}
    if mode == "pypi" and ucx.get("present") and truthy(s.get("nixl_fail_on_ucx_conflict", True)):
        found.append(problem(host, PREFIX + "nixl_source",
                             "%s has a system UCX (%s%s) and NIXL is to come from PyPI, whose bundled UCX conflicts with it (%s)" % (
                                 host, ucx.get("ucx_info") or ucx.get("libucp"), (" " + ucx["version"]) if ucx.get("version") else "",
                                 UCX_CONFLICT_REF),
                             "set sglang_install_nixl_source to source (build against %s) or auto, or set "
                             "sglang_install_nixl_fail_on_ucx_conflict to false to accept the risk" % s.get("nixl_ucx_prefix")))

    cuda_builds = _names(item for item in items if needs_cuda(item))
    cuda = facts.get("cuda") or {}
    if cuda_builds and not cuda.get("nvcc"):
        found.append(problem(host, PREFIX + "cuda_home",
                             "Kernel builds (%s) need the CUDA toolkit, and no nvcc was found in %s/bin or on PATH" % (
                                 ", ".join(cuda_builds), s.get("cuda_home")),
                             "install the CUDA toolkit, or point sglang_install_cuda_home at it"))

    reasons = git_users(s, items)
    if reasons and not facts.get("git"):
        found.append(problem(host, PREFIX + reasons[0][0],
                             "git is not installed on %s, and a git source is asked for: %s" % (
                                 host, "; ".join(reason for var, reason in reasons)),
                             "install git"))

    if truthy(s.get("offline", False)):
        for var, repo in _sglang_tree_repos(s):
            if NETWORK_URL_RE.match(str(repo)):
                found.append(problem(host, PREFIX + var,
                                     "offline mode installs from the wheelhouse only, but a git checkout from %s is asked for" % repo,
                                     "point it at a local mirror (file:// or a path), or use sglang_install_chat_template_file"))

    model_path = s.get("model_path")
    if s.get("model_source") == "path" and model_path:
        config = model_path.rstrip("/") + "/config.json"
        if not _path(facts, config).get("exists"):
            found.append(problem(host, PREFIX + "model_path", "%s holds no config.json on %s" % (model_path, host),
                                 "copy the model there, or set sglang_install_model_source to hf with a repo_id and revision"))

    user_facts = (facts.get("users") or {}).get(s.get("user"))
    if not truthy(s.get("create_user", True)) and user_facts is not None and not user_facts.get("exists"):
        found.append(problem(host, PREFIX + "user", "%s does not exist on %s, and sglang_install_create_user is false" % (
            s.get("user"), host), "create the user first (or set sglang_install_create_user to true)"))

    build_facts = (facts.get("users") or {}).get(s.get("build_user"))
    if (not truthy(s.get("create_user", True)) and needs_build_user(s, items) and build_facts is not None
            and not build_facts.get("exists")):
        found.append(problem(host, PREFIX + "build_user",
                             "%s does not exist on %s, something is to be built or checked out, and sglang_install_create_user "
                             "is false" % (s.get("build_user"), host),
                             "create that unprivileged user (and its group of the same name) first, or set "
                             "sglang_install_create_user to true"))
    venv, user = s.get("venv"), s.get("user")
    for var, path, label in ((PREFIX + "venv", venv, "lib/"), (PREFIX + "venv", venv, "")):
        probe = venv_probe(path) if label else path
        owner = _path(facts, probe).get("owner") if path else None
        if owner and owner not in ("root", user):
            found.append(problem(host, var,
                                 "%s already exists and its %s belongs to %s, neither root (who installs it) nor %s (whose "
                                 "venvs earlier versions convert): it was not made by this collection" % (
                                     path, label or "directory", owner, user),
                                 "point sglang_install_venv elsewhere, or remove it (it is recreated) or chown -R root:root %s"
                                 % path))
            break
    found += _umask_problems(host, facts)
    return found


def _sglang_tree_repos(s):
    """The SGLang trees checked out: (variable, repository)."""
    if s.get("source") == "git":
        return [("git_repo", s.get("git_repo"))]
    if s.get("chat_template_source") == "sglang":
        return [("chat_template_git_repo", s.get("chat_template_git_repo"))]
    return []


def venv_probe(venv: str) -> str:
    """The path whose owner says who made the venv (the venv directory itself is chowned by the role)."""
    return str(venv).rstrip("/") + "/lib"


def warnings(host: str, s: Dict[str, Any], facts: Dict[str, Any], mode: Optional[str]) -> List[str]:
    """What the preflight lets through but an operator should read."""
    found = []
    model_path = s.get("model_path")
    owner = _path(facts, model_path).get("owner") if model_path else None
    if s.get("model_source") == "path" and owner and owner == s.get("user"):
        found.append("%s (sglang_install_model_path) belongs to %s, the user the model servers run as: a compromised "
                     "server could change the model. The role leaves a model it did not download as it is; "
                     "chown -R root:root %s makes it read-only to the servers." % (model_path, owner, model_path))
    ucx = facts.get("ucx") or {}
    if mode == "pypi" and ucx.get("present") and not truthy(s.get("nixl_fail_on_ucx_conflict", True)):
        found.append("NIXL from PyPI bundles its own UCX and %s has a system UCX (%s): if transfers fail with NIXL_ERR_BACKEND, "
                     "build NIXL against the system UCX (sglang_install_nixl_source: source)." % (host, ucx.get("ucx_info") or ucx.get("libucp")))
    return found


def _umask_problems(host, facts):
    """Root's umask where the role runs: pip and the download honour it, and the services must read what they write."""
    umask = facts.get("umask")
    if not isinstance(umask, int) or not umask & UMASK_HIDES:
        return []
    return [problem(host, PREFIX + "user",
                    "root's umask on %s is %04o: the venv and the model tree root installs would not be readable by %s" % (
                        host, umask, "the services"),
                    "give the become user a umask of 0022 (for sudo: Defaults umask=0022 in sudoers, or the login umask)")]


def _entry_dir(path, owner, group, mode):
    return {"path": path, "owner": owner, "group": group, "mode": mode}


def needs_build_user(s: Dict[str, Any], items: List[Dict[str, Any]]) -> bool:
    """Whether anything is checked out or compiled: kernel builds, SGLang from git, the SGLang tree's chat template."""
    return bool(items) or s.get("source") == "git" or s.get("chat_template_source") == "sglang"


def directories(s: Dict[str, Any], items: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The directories the role needs, parents first: ``{path, owner, group, mode}`` (owner None: left as it is).

    What the services run or read (the venv, the model tree) is root's, 0755: a compromised server cannot change its
    own code or the router's. Root's own state (pip's HOME and cache, the download's token, log and result) is 0700.
    Checkouts and compilation happen in the build user's directories, never as root."""
    build = s.get("build_user")
    wanted = [_entry_dir(s.get("root"), None, None, "0755")]
    if s.get("state_dir"):
        wanted.append(_entry_dir(s.get("state_dir"), "root", "root", "0700"))
    if items or s.get("model_source") == "hf":
        wanted.append(_entry_dir(str(s.get("root")) + "/libexec", None, None, "0755"))  # the job runner
    if s.get("chat_template_source", "none") != "none" and s.get("chat_template_dest"):
        wanted.append(_entry_dir(posixpath.dirname(str(s["chat_template_dest"])), None, None, "0755"))
    wanted.append(_entry_dir(s.get("venv"), "root", "root", "0755"))
    if items or s.get("source") == "git":
        wanted.append(_entry_dir(s.get("build_dir"), build, build, "0755"))
    if s.get("source") == "git" or s.get("chat_template_source") == "sglang":
        wanted.append(_entry_dir(s.get("src_dir"), build, build, "0755"))
    if s.get("model_source") == "hf":
        wanted.append(_entry_dir(s.get("model_path"), "root", "root", "0755"))
    result: List[Dict[str, Any]] = []
    for entry in wanted:
        if entry["path"] and entry["path"] not in [e["path"] for e in result]:
            result.append(entry)
    return result


def directories_to_fix(s: Dict[str, Any], facts: Dict[str, Any], wanted: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Those of ``wanted`` that install_facts found missing or not as wanted (mode, and owner and group when set)."""
    fix = []
    for entry in wanted:
        info = _path(facts, entry["path"])
        right = info.get("isdir") and info.get("mode") == entry["mode"]
        if entry["owner"]:
            right = right and info.get("owner") == entry["owner"] and info.get("group") == entry["group"]
        if not right:
            fix.append(entry)
    return fix


def conversions(s: Dict[str, Any], facts: Dict[str, Any], wanted: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The trees an earlier version gave the service user, to hand to their new owner recursively: the venv (whose
    lib/ says who installed it), the model tree of a download, the build and source directories. ``{path, owner,
    group, from_owner, what}``; empty on a host this version deployed, so a rerun runs nothing for it."""
    user = s.get("user")
    venv = s.get("venv")
    result = []
    for entry in wanted:
        if not entry["owner"] or entry["owner"] == user:
            continue
        probes = [entry["path"]] + ([venv_probe(venv)] if entry["path"] == venv else [])
        if any(_path(facts, probe).get("owner") == user for probe in probes):
            what = {venv: "venv", s.get("model_path"): "model tree"}.get(entry["path"], "build directory")
            result.append({"path": entry["path"], "owner": entry["owner"], "group": entry["group"], "from_owner": user,
                           "what": what})
    return result


# name==version and nothing else: the only requirement whose being met can be read from the installed versions
# alone. Extras, ranges, URLs and markers are left to pip.
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.!+_-]+)")


def _canonical(name: str) -> str:
    """PEP 503's normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def unmet_requirements(requirements: List[str], installed: Dict[str, str]) -> List[str]:
    """Those of ``requirements`` that the venv's installed versions do not meet, in their order. A pin without a
    local label (``torch==2.9.1``) is met by that version with any local label (``2.9.1+cu130``), as PEP 440 says;
    whatever is not a plain pin is unmet (pip judges it)."""
    versions = {_canonical(str(name)): str(version) for name, version in (installed or {}).items()}
    unmet = []
    for requirement in requirements or []:
        match = _PIN.fullmatch(str(requirement))
        if match is None:
            unmet.append(requirement)
            continue
        have = versions.get(_canonical(match.group(1)))
        if have is None:
            unmet.append(requirement)
            continue
        want = match.group(2)
        if have != want and not ("+" not in want and have.split("+", 1)[0] == want):
            unmet.append(requirement)
    return unmet


def pip_requirements(s: Dict[str, Any], mode: Optional[str]) -> Dict[str, List[str]]:
    """What the pip steps install (packages.yml): torch, SGLang from PyPI, then the router, the pip NIXL and the extra
    packages in one step; ``all`` is every one of them."""
    extras = [str(e) for e in s.get("extras") or []]
    sglang = ["sglang%s==%s" % ("[%s]" % ",".join(extras) if extras else "", s.get("version"))] if s.get("source") == "pypi" else []
    packages = (["sglang-router==%s" % s["router_version"]] if s.get("router_version") else []) \
        + (["smg==%s" % s["router_smg_version"]] if s.get("router_smg_version") else []) \
        + (["%s==%s" % (s.get("nixl_package") or "nixl", s.get("nixl_version"))] if mode == "pypi" else []) \
        + [str(r) for r in s.get("extra_packages") or []]
    torch = [str(r) for r in s.get("torch_packages") or []]
    return {"torch": torch, "sglang": sglang, "packages": packages, "all": torch + sglang + packages}


def lock_plan(host: str, s: Dict[str, Any], mode: Optional[str], wanted: List[str]) -> Dict[str, Any]:
    """The lock this venv installs from (``s["pip_lock_found"]``: what the filter found on the controller, see
    plugins/filter/install.py) and its problems: ``{mode, path, requirements, problems}``."""
    found = s.get("pip_lock_found") or {}
    result: Dict[str, Any] = {"mode": found.get("mode") or pip_lock.WITHOUT_HASHES, "path": found.get("path") or "", "requirements": [],
                              "problems": []}
    if result["mode"] == pip_lock.WITHOUT_HASHES:
        return result
    label = "(%s)" % (found.get("path") or s.get("pip_lock"))
    if found.get("error"):
        result["problems"].append(problem(host, pip_lock.VARIABLE, "%s %s" % (s.get("pip_lock"), found["error"]),
                                          "write the lock with %s and point %s at it, or set it to %s to install "
                                          "without hashes" % (pip_lock.GENERATE, pip_lock.VARIABLE, pip_lock.WITHOUT_HASHES)))
        return result
    parsed = found.get("lock") or {}
    why_not = {}
    if s.get("source") != "pypi":
        why_not["sglang"] = "sglang_install_source is %s" % s.get("source")
    if mode != "pypi":
        why_not[s.get("nixl_package") or "nixl"] = "NIXL is %s (sglang_install_nixl_source)" % (
            "built from source" if mode == "source" else "not installed")
    result["problems"] = pip_lock.judge(host, parsed, wanted, label, why_not)
    result["requirements"] = pip_lock.requirements(parsed)
    return result


def venv_incomplete(s: Dict[str, Any], facts: Dict[str, Any]) -> bool:
    """Whether the venv holds the marker the role writes before it creates or fills a venv and removes once every
    package step succeeded: an install that stopped there (a full disk, a dead package index) left it."""
    marker = incomplete_marker(s)
    return bool(marker) and bool(_path(facts, marker).get("exists"))


def incomplete_marker(s: Dict[str, Any]) -> str:
    """The venv's incomplete marker (``incomplete_marker_name`` in ``venv``); empty without a name or venv."""
    name, venv = s.get("incomplete_marker_name"), s.get("venv")
    return posixpath.join(str(venv), str(name)) if name and venv else ""


def up_to_date(s: Dict[str, Any], facts: Dict[str, Any], decided: Dict[str, Any]) -> bool:
    """Whether the users, directories, venv and packages are as wanted: the role's steps up to the packages have
    nothing to do (the kernel builds, the chat template and the model have checks of their own)."""
    users = facts.get("users") or {}
    build_user_ok = not s.get("create_user") or not decided["needs_build_user"] or bool(
        (users.get(s.get("build_user")) or {}).get("exists"))
    venv_python = posixpath.join(s.get("venv") or "", "bin", "python")
    return (not facts.get("account_to_fix") and build_user_ok and not decided["directories_to_fix"]
            and not decided["conversions"] and bool((_path(facts, venv_python) or {}).get("exists"))
            and decided["pins_met"] and s.get("source") != "git")


def plan(host: str, settings: Dict[str, Any], facts: Dict[str, Any]) -> Dict[str, Any]:
    """Decisions and problems; see the module docstring."""
    s = dict(settings or {})
    facts = facts or {}
    ucx = facts.get("ucx") or {}
    mode = nixl_mode(s.get("nixl_source"), bool(ucx.get("present")))
    items = builds(s, mode)
    problems = unique(_settings_problems(host, s) + _build_problems(host, s, items) + _python_problems(host, s, facts)
                      + _glibc_problems(host, s, facts) + _disk_problems(host, facts) + _host_problems(host, s, facts, mode, items))
    wanted = directories(s, items)
    pip = pip_requirements(s, mode)
    locked = lock_plan(host, s, mode, pip["all"])
    problems = unique(problems + locked.pop("problems"))
    # Every pin of the pip steps, or with a lock every pin of the lock: all met by the venv as install_facts found it
    # means no pip runs.
    requirements = locked["requirements"] if locked["mode"] == "hashes" else pip["all"]
    decided = {
        "directories_to_fix": directories_to_fix(s, facts, wanted),
        "conversions": conversions(s, facts, wanted),
        "needs_build_user": needs_build_user(s, items),
        # A venv an interrupted install left (its marker is there) is installed again whatever it lists.
        "venv_incomplete": venv_incomplete(s, facts),
    }
    decided["pins_met"] = (not decided["venv_incomplete"]
                           and not unmet_requirements(requirements, dict(facts.get("venv_packages") or {})))
    return dict(decided, **{
        "pip": pip,
        "pip_lock": locked,
        "nixl_mode": mode,
        "directories": wanted,
        "up_to_date": up_to_date(s, facts, decided),
        "kernel_builds": items,
        "needs_cuda": any(needs_cuda(item) for item in items),
        "needs_git": bool(git_users(s, items)),
        "problems": problems,
        "report": report(problems, "sglang_install preflight") if problems else "",
        "warnings": warnings(host, s, facts, mode),
    })
