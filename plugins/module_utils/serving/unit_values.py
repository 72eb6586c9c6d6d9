# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What may be written into a systemd unit or environment file, judged value by value.

One judgement for two callers: the preflight lists every refused value as a problem (host, variable, message, fix)
before anything changes, and the renderer (units.py) raises on the first one, so a value that slipped past the
preflight (a role used without it, a new caller) still never writes a file that systemd reads differently.

What is refused: control characters anywhere (systemd ends a setting at a line break, so the rest of the value
would become settings of its own, ``ExecStartPre=+...`` run as root included), unit settings that are not what
systemd expects for them, hardening options this collection does not know, and hardening values outside the set
systemd accepts for each option.
"""

import difflib
import re
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple, cast

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.caches import CACHE_VARIABLES, root_problem

# C0 controls and DEL: a line break ends a unit setting or an env file line, NUL truncates it, and the rest
# (tab, escape, ...) is no part of any value this collection writes.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# ``${NAME}``, whole: the only form written for systemd to expand (an environment variable of the unit).
ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What systemd accepts as User=/Group= (its relaxed rule, numeric ids included), whole.
ACCOUNT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]+")
# The executable of ExecStart=: an absolute path, never one of systemd's prefixes (+ runs it as root, - ! @ :).
EXECUTABLE = re.compile(r"/[A-Za-z0-9_.,/+=~-]*")
# A plain absolute path (directories and files the units name): no whitespace, as ReadWritePaths= splits on it.
ABSOLUTE_PATH = re.compile(r"/[^\s\"'\\]*")
_NUMBER = re.compile(r"[0-9]+")
_TIMESPAN = re.compile(r"[0-9]+(\.[0-9]+)?(us|ms|s|sec|m|min|h|d|w)?( ?[0-9]+(\.[0-9]+)?(us|ms|s|sec|m|min|h|d|w))*|infinity")
_OCTAL_UMASK = re.compile(r"0?[0-7]{3}")
_CAPABILITY = re.compile(r"CAP_[A-Z_]+")
_FAMILY = re.compile(r"AF_[A-Z0-9_]+")
_ARCHITECTURE = re.compile(r"native|[a-z][a-z0-9_-]*")
_SYSCALL = re.compile(r"@?[a-z][a-z0-9_-]*(:[A-Z0-9]+)?")
_ERRNO = re.compile(r"E[A-Z0-9]+|[0-9]+|kill|log")
_DEVICE = re.compile(r"(/dev/[A-Za-z0-9_./:+-]+|(char|block)-[A-Za-z0-9_.*?+-]+)( [rwm]{1,3})?")
_IP_ENTRY = re.compile(r"any|localhost|link-local|multicast|[0-9A-Fa-f.:]+(/[0-9]{1,3})?")
_NAMESPACES = ("cgroup", "ipc", "net", "mnt", "pid", "user", "uts")
_BOOLEANS = ("yes", "no", "true", "false", "on", "off", "1", "0")


def control_message(value: Any) -> Optional[str]:
    """Why ``value`` cannot be written (a control character in it), or None."""
    found = _CONTROL.search(str(value))
    if found:
        return "holds the control character %r, which would end or cut its line in the unit" % found.group(0)
    return None


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _words(value: Any) -> List[str]:
    return str(value).split()


def _boolean(value: Any) -> Optional[str]:
    if isinstance(value, bool) or str(value).lower() in _BOOLEANS:
        return None
    return "must be a boolean (true or false)"


def _choice(*choices: str, boolean: bool = True) -> Callable[[Any], Optional[str]]:
    def check(value):
        if boolean and (isinstance(value, bool) or str(value).lower() in _BOOLEANS):
            return None
        if str(value) in choices:
            return None
        return "must be %s%s" % ("true, false or " if boolean else "", " or ".join(choices))
    return check


def _each(pattern: Any, what: str, empty: bool = True, invert: bool = True) -> Callable[[Any], Optional[str]]:
    """A space-separated list whose every word matches ``pattern`` (whole), optionally after one leading ``~``."""
    def check(value):
        words = _words(value)
        if not words:
            return None if empty else "must not be empty"
        if invert and words[0].startswith("~"):
            words[0] = words[0][1:]
        bad = [w for w in words if not pattern.fullmatch(w)]
        return "must be %s, not %s" % (what, ", ".join(repr(w) for w in bad)) if bad else None
    return check


def _namespaces(value):
    if isinstance(value, bool) or str(value).lower() in _BOOLEANS:
        return None
    words = _words(value)
    if words and words[0].startswith("~"):
        words[0] = words[0][1:]
    bad = [w for w in words if w not in _NAMESPACES]
    return "must be a boolean or namespace types (%s), not %s" % (" ".join(_NAMESPACES), ", ".join(map(repr, bad))) if bad or not words else None


def _umask(value):
    if isinstance(value, str) and _OCTAL_UMASK.fullmatch(value):
        return None
    return "must be an octal mask written as a quoted string, e.g. '0027' (YAML reads 0027 unquoted as the number 23)"


def _paths(value):
    for word in _words(value):
        path = word.lstrip("-+")
        if not ABSOLUTE_PATH.fullmatch(path):
            return "must be absolute paths (optionally prefixed with - or +), separated by spaces, not %r" % word
    return None


def _device(value):
    if _DEVICE.fullmatch(str(value)):
        return None
    return "must be a device node (/dev/...) or char-NAME/block-NAME, then r, w and/or m, not %r" % (value,)


# Every hardening option a unit may carry, and the values systemd accepts for it (systemd.exec(5),
# systemd.resource-control(5)). An option missing here is refused: a misspelled one would be ignored by systemd
# with a warning, leaving the service less confined than the inventory says.
HARDENING: Dict[str, Callable[[Any], Optional[str]]] = {
    "NoNewPrivileges": _boolean,
    "PrivateTmp": _boolean,
    "PrivateDevices": _boolean,
    "PrivateNetwork": _boolean,
    "PrivateIPC": _boolean,
    "PrivateMounts": _boolean,
    "PrivateUsers": _boolean,
    "ProtectKernelTunables": _boolean,
    "ProtectKernelModules": _boolean,
    "ProtectKernelLogs": _boolean,
    "ProtectControlGroups": _boolean,
    "ProtectClock": _boolean,
    "ProtectHostname": _boolean,
    "RestrictSUIDSGID": _boolean,
    "RestrictRealtime": _boolean,
    "LockPersonality": _boolean,
    "MemoryDenyWriteExecute": _boolean,
    "RemoveIPC": _boolean,
    "ProtectSystem": _choice("full", "strict"),
    "ProtectHome": _choice("read-only", "tmpfs"),
    "ProtectProc": _choice("noaccess", "invisible", "ptraceable", "default", boolean=False),
    "ProcSubset": _choice("all", "pid", boolean=False),
    "KeyringMode": _choice("inherit", "private", "shared", boolean=False),
    "DevicePolicy": _choice("auto", "closed", "strict", boolean=False),
    "RestrictNamespaces": _namespaces,
    "UMask": _umask,
    "CapabilityBoundingSet": _each(_CAPABILITY, "capability names (CAP_...)"),
    "AmbientCapabilities": _each(_CAPABILITY, "capability names (CAP_...)"),
    "RestrictAddressFamilies": _each(re.compile(r"none|AF_[A-Z0-9_]+"), "address families (AF_...) or none"),
    "SystemCallArchitectures": _each(_ARCHITECTURE, "architecture names (native, x86-64, ...)", invert=False),
    "SystemCallFilter": _each(_SYSCALL, "system call names or @groups"),
    "SystemCallErrorNumber": _each(_ERRNO, "an errno name such as EPERM", empty=False, invert=False),
    "IPAddressAllow": _each(_IP_ENTRY, "addresses, prefixes, any, localhost, link-local or multicast", invert=False),
    "IPAddressDeny": _each(_IP_ENTRY, "addresses, prefixes, any, localhost, link-local or multicast", invert=False),
    "DeviceAllow": _device,
    "ReadWritePaths": _paths,
    "ReadOnlyPaths": _paths,
    "InaccessiblePaths": _paths,
    "ExecPaths": _paths,
    "NoExecPaths": _paths,
}
# Options systemd accumulates over several lines: a list value is written one line per item.
REPEATABLE = ("DeviceAllow", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths",
              "SystemCallFilter", "RestrictAddressFamilies", "CapabilityBoundingSet", "AmbientCapabilities",
              "IPAddressAllow", "IPAddressDeny")
# Options whose values systemd expands specifiers in (% must be doubled).
PATH_OPTIONS = ("ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths")


def hardening_problems(options: Any) -> List[Tuple[str, str, str]]:
    """``[(option, message, fix)]`` for a hardening mapping (None drops an option)."""
    if not isinstance(options, dict):
        return [("", "must be a mapping of systemd options to values, got %r" % (options,),
                 "e.g. {ProtectSystem: strict, NoNewPrivileges: true}")]
    found = []
    for key in sorted(options, key=str):
        value = options[key]
        if value is None:
            continue
        if not isinstance(key, str) or key not in HARDENING:
            close = difflib.get_close_matches(str(key), list(HARDENING), n=1)
            found.append((str(key), "is not a hardening option this collection writes%s" % (
                " (did you mean %r?)" % close[0] if close else ""),
                "use one of: %s (or drop it)" % ", ".join(sorted(HARDENING))))
            continue
        values = value if isinstance(value, list) and key in REPEATABLE else [value]
        for item in values:
            if not is_scalar(item) or item is None:
                found.append((key, "must be a single value%s, got %r" % (
                    " or a list" if key in REPEATABLE else "", value), "write it as systemd does, e.g. %s: yes" % key))
                break
            why = control_message(item) or HARDENING[key](item)
            if why:
                found.append((key, "%s (got %r)" % (why, item), "see systemd.exec(5) for the values %s= takes" % key))
                break
    return found


def hardening_lines(options: Dict[str, Any]) -> List[Tuple[str, str]]:
    """``[(option, value)]`` in option order, one per line; booleans as yes/no, % doubled where systemd expands it."""
    rows = []
    for key in sorted(options or {}):
        value = options[key]
        if value is None:
            continue
        for item in (value if isinstance(value, list) else [value]):
            text = ("yes" if item else "no") if isinstance(item, bool) else str(item)
            rows.append((key, text.replace("%", "%%") if key in PATH_OPTIONS else text))
    return rows


def setting_problem(key: str, value: Any) -> Optional[str]:
    """Why ``value`` cannot be written as the unit setting ``key`` (the settings the renderer writes), or None."""
    if not is_scalar(value) or value is None:
        return "must be a single value, got %r" % (value,)
    why = control_message(value)
    if why:
        return why
    text = str(value)
    if key in ("User", "Group"):
        return None if ACCOUNT_NAME.fullmatch(text) else "is not a user or group name systemd accepts (%r)" % text
    if key in ("WorkingDirectory", "EnvironmentFile", "ReadWritePaths"):
        return None if ABSOLUTE_PATH.fullmatch(text) else "must be an absolute path without spaces or quotes (%r)" % text
    if key in ("RestartSec", "TimeoutStopSec", "StartLimitIntervalSec"):
        return None if not isinstance(value, bool) and _TIMESPAN.fullmatch(text) else "must be a time span such as 10 or 30s (%r)" % text
    if key in ("StartLimitBurst",):
        return None if not isinstance(value, bool) and _NUMBER.fullmatch(text) else "must be a whole number (%r)" % text
    if key in ("LimitNOFILE", "LimitMEMLOCK"):
        ok = not isinstance(value, bool) and (_NUMBER.fullmatch(text) or text == "infinity"
                                              or re.fullmatch(r"[0-9]+:[0-9]+", text))
        return None if ok else "must be a number or infinity (%r)" % text
    return None


def executable_problem(value: Any) -> Optional[str]:
    """Why ``value`` cannot be the program of ExecStart= (systemd's prefixes +, -, !, @ and : change how it runs)."""
    why = control_message(value)
    if why:
        return why
    if not EXECUTABLE.fullmatch(str(value)):
        return "must start with an absolute path to the program (letters, digits and _ . , / + = ~ -), not %r" % (value,)
    return None


def env_problems(env: Any) -> List[Tuple[str, str, str]]:
    """``[(name, message, fix)]`` for an environment mapping: names matched whole, values on one line."""
    found = []
    for name in sorted(env or {}, key=str):
        value = env[name]
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            found.append(("", "%r is not a valid environment variable name" % (name,),
                          "use letters, digits and underscores, not starting with a digit"))
        elif not is_scalar(value) or value is None:
            found.append((name, "must be a single value, got %r" % (value,), "write the value as a string"))
        elif control_message(value):
            found.append((name, cast(str, control_message(value)),
                          "an environment file takes one line per variable: put the value on one line, "
                          "without tabs or other control characters"))
    return found


def words_problems(words: Optional[Iterable[Any]]) -> List[Tuple[int, str]]:
    """``[(index, message)]`` for command-line words (flags, values, extra_args)."""
    found = []
    for index, word in enumerate(words or []):
        if not is_scalar(word) or word is None:
            found.append((index, "must be a single word, got %r" % (word,)))
        elif control_message(word):
            found.append((index, "%r %s" % (word, control_message(word))))
    return found


# The settings the renderer writes as unit settings (units.py), by the key the roles pass them under.
_UNIT_SETTINGS = (("user", "User"), ("group", "Group"), ("home", "WorkingDirectory"), ("config_dir", "EnvironmentFile"),
                  ("unit_dir", "EnvironmentFile"), ("restart_sec", "RestartSec"), ("timeout_stop_sec", "TimeoutStopSec"),
                  ("start_limit_interval_sec", "StartLimitIntervalSec"), ("start_limit_burst", "StartLimitBurst"),
                  ("limit_nofile", "LimitNOFILE"))
_URL = re.compile(r"https?://[^\s\"'\\]+")


class PdSetting(NamedTuple):
    """One of SGLang's PD environment settings the role passes as a variable of its own."""
    key: str        # the key the role passes it under (the variable is the role's prefix + key)
    env: str        # the variable written into the env file
    mode: str       # the mode whose SGLang reads it: only that mode's env files get it
    fraction: bool  # read as a float (else as an integer)
    least: int      # the least value that means what it says
    unread: str     # what SGLang does with a value it cannot read, or one below ``least``
    fix: str        # what the variable means, for the preflight's fix line


# SGLang 0.5.23's PD settings. The timeouts (EnvInt: anything but a whole number silently becomes 300): the prefill fails
# a request its decode never bootstrapped, the decode one whose KV never came. The decode's heartbeat to each prefill's
# bootstrap server: every HEARTBEAT_INTERVAL seconds (a float, silently raised to 2), failing the requests of a prefill
# after HEARTBEAT_MAX_FAILURE misses in a row (an integer, silently raised to 1).
_TIMEOUT_UNREAD = "SGLang falls back to 300 s on anything but a whole number, and 0 fails every request at once"
_TIMEOUT_FIX = "seconds before a request whose KV handshake or transfer stalls fails, e.g. 30"
PD_SETTINGS = (
    PdSetting("disaggregation_bootstrap_timeout", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "prefill", False, 1,
              _TIMEOUT_UNREAD, _TIMEOUT_FIX),
    PdSetting("disaggregation_waiting_timeout", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT", "decode", False, 1,
              _TIMEOUT_UNREAD, _TIMEOUT_FIX),
    PdSetting("disaggregation_heartbeat_interval", "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", "decode", True, 2,
              "SGLang would silently use 2", "seconds between the decode's heartbeats to each prefill, at least 2, e.g. 5.0"),
    PdSetting("disaggregation_heartbeat_max_failure", "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE", "decode", False, 1,
              "SGLang would silently use 1",
              "heartbeats a prefill may miss in a row before the decode fails its requests, at least 1, e.g. 2"),
)


def _pd_text(value: Any, setting: PdSetting) -> Optional[str]:
    """``value`` as the text SGLang would read as ``setting``, or None where it could not."""
    if value is None or isinstance(value, bool) or not is_scalar(value):
        return None
    text = str(value).strip()
    return text if re.fullmatch(r"[0-9]+(\.[0-9]+)?" if setting.fraction else r"[0-9]+", text) else None


def pd_setting_problem(value: Any, setting: PdSetting) -> Optional[str]:
    """Why ``value`` cannot be ``setting``, or None: a number (a whole number unless it takes a fraction) of at least
    its least value, since SGLang would silently read anything else as something the operator did not ask for."""
    text = _pd_text(value, setting)
    if text is None or float(text) < setting.least:
        return "must be a %s, at least %d (%s), got %r" % (
            "number such as 5 or 2.5" if setting.fraction else "whole number", setting.least, setting.unread, value)
    return None


def pd_env(settings: Dict[str, Any], mode: str) -> Dict[str, str]:
    """The PD variables of a server in ``mode`` from the role's settings (those it sets, already judged)."""
    found = {}
    for setting in PD_SETTINGS:
        if setting.mode == mode and settings.get(setting.key) is not None:
            text = cast(str, _pd_text(settings[setting.key], setting))  # server_unit's _guard judged it: never None
            found[setting.env] = str(float(text)) if setting.fraction else str(int(text))
    return found


def settings_problems(settings: Dict[str, Any], prefix: str, names: Optional[Dict[str, str]] = None) -> List[Tuple[str, str, str]]:
    """``[(variable, message, fix)]`` for a role's unit settings (the dict units.server_unit/router_unit read).

    ``prefix`` names a key's variable (``sglang_server_`` + key); ``names`` overrides that for some keys (the
    hardening mapping is set through ``..._systemd_hardening_overrides``).
    """
    names = dict(names or {})
    settings = settings or {}

    def var(key):
        return names.get(key, prefix + key)

    found = []
    launch = settings.get("launch_command")
    if launch is not None:
        why = control_message(launch)
        words = str(launch).split()
        why = why or (executable_problem(words[0]) if words else "is empty")
        if why:
            found.append((var("launch_command"), why, "an absolute path to the program, then its arguments, e.g. "
                          "/opt/sglang/venv/bin/python -m sglang.launch_server"))
    if settings.get("numactl_path") is not None and settings.get("numa_binding", "numactl") == "numactl":
        why = executable_problem(settings["numactl_path"])
        if why:
            found.append((var("numactl_path"), why, "the absolute path of numactl, e.g. /usr/bin/numactl"))
    for setting in PD_SETTINGS:
        why = pd_setting_problem(settings[setting.key], setting) if settings.get(setting.key) is not None else None
        if why:
            found.append((var(setting.key), why, setting.fix))
    for key, unit_key in _UNIT_SETTINGS:
        if key not in settings:
            continue
        why = setting_problem(unit_key, settings[key])
        if why:
            found.append((var(key), why, "see the role's README for what %s takes" % var(key)))
    for option, message, fix in hardening_problems(settings.get("hardening") or {}):
        found.append((var("hardening") + ("." + option if option else ""), message, fix))
    for name, message, fix in env_problems(settings.get("env") or {}) if isinstance(settings.get("env") or {}, dict) else \
            [("", "must be a mapping of variable names to values, got %r" % (settings.get("env"),), "e.g. {NAME: value}")]:
        found.append((var("env") + ("." + name if name else ""), message, fix))
    found.extend(_cache_problems(settings, var))
    for key in ("api_key", "hf_endpoint"):
        value = settings.get(key)
        if value in (None, ""):
            continue
        why = control_message(value) if is_scalar(value) else "must be a single value"
        if why is None and key == "hf_endpoint" and not _URL.fullmatch(str(value)):
            why = "must be an http:// or https:// URL without spaces or quotes (%r)" % (value,)
        if why:
            found.append((var(key), why if key != "api_key" else "holds a control character (value not shown)",
                          "write it on one line, without control characters"))
    for index, message in words_problems(settings.get("extra_args") if isinstance(settings.get("extra_args"), list) else []):
        found.append(("%s[%d]" % (var("extra_args"), index), message, "one word per item, on one line"))
    return found


def _cache_problems(settings, var):
    """The compile cache root, and an env that would take the per-instance cache directories away (caches.py)."""
    found = []
    if settings.get("cache_root") not in (None, ""):
        root = settings["cache_root"]
        why = root_problem(root)
        home = str(settings.get("home") or "").rstrip("/")
        if why is None and home and (home == root or home.startswith(str(root) + "/")):
            why = "is %s's own directory or one above it: its modes would change the home" % home
        if why:
            found.append((var("cache_root"), why, "a directory of its own, e.g. /var/lib/sglang/cache (the default)"))
    env = settings.get("env")
    for name in sorted(n for n in (env if isinstance(env, dict) else {}) if n in CACHE_VARIABLES):
        found.append((var("env") + "." + name, "would put every instance's compile cache in one directory (two "
                      "instances compiling into one directory crash, sglang#27604); the collection sets it per instance",
                      "leave it out and move the caches with sglang_server_cache_root"))
    return found
