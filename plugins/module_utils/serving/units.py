# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""systemd unit and environment files of the model servers and the router, rendered as text.

Both kinds share one layout: a marker line (how the roles find the units they rendered), [Unit],
[Service] with one flag per ExecStart line and every value quoted, the lifecycle settings, the
hardening options, [Install]. The roles write the text with ansible.builtin.copy (diff, check mode).
"""

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import (
    ROUTER_API_KEY_ENV,
    router_args,
    server_args,
)

# Flags and paths are written bare for readability; anything else is quoted.
_BARE_WORD = re.compile(r"^(--?[A-Za-z0-9]|/)[A-Za-z0-9_.,:/=+-]*$")
HEADER = "# Ansible managed (pdserve.sglang): local changes are overwritten on the next run."
SERVER_MARKER = "# pdserve.sglang.sglang_server mode=%s"
ROUTER_MARKER = "# pdserve.sglang.sglang_router"
# What a unit runs, first in its env file as PDSERVE_<FIELD>: a new version, venv or model revision changes the file,
# so the unit restarts and the restart plan names the field (module_utils/serving/restart_plan.py).
FINGERPRINT_FIELDS = ("sglang", "sglang_router", "venv", "model")


def fingerprint_variables(fingerprint: Optional[Dict[str, Any]]) -> List[Tuple[str, Any]]:
    """``[(PDSERVE_SGLANG, "0.5.23"), (PDSERVE_VENV, ...), ...]`` for the fields that have a value."""
    fingerprint = fingerprint or {}
    return [("PDSERVE_" + field.upper(), fingerprint[field]) for field in FINGERPRINT_FIELDS
            if fingerprint.get(field) not in (None, "")]


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def systemd_quote(value: Any) -> str:
    """One word of an ExecStart= line: double quotes, with \\, ", % and $ escaped for systemd."""
    text = _text(value).replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("%", "%%").replace("$", "$$").replace("\n", "\\n")
    return '"%s"' % text


def env_quote(value: Any) -> str:
    """One value of an EnvironmentFile= line (KEY="value")."""
    text = _text(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"%s"' % text


def exec_start(first: List[Any], lines: List[List[Any]]) -> str:
    """``ExecStart=`` with ``first`` (the executable and its leading words) and one line per flag."""
    head = [first[0]] + [systemd_quote(word) for word in first[1:]]
    rows = ["ExecStart=" + " ".join(head)]
    for line in lines:
        flag = str(line[0])
        # Quoted when extra_args made it a --flag=value word that systemd would split, expand ($) or
        # read as a specifier (%).
        words = [flag if _BARE_WORD.match(flag) else systemd_quote(flag)]
        for value in line[1:]:
            text = str(value)
            # ${VAR} is systemd's own expansion (the router's API key from its env file): keep it.
            words.append('"%s"' % text if text.startswith("${") and text.endswith("}") else systemd_quote(value))
        rows.append("    " + " ".join(words))
    return " \\\n".join(rows)


def _hardening(options):
    rows = []
    for key in sorted(options or {}):
        value = options[key]
        if value is None:
            continue
        rows.append((key, ("yes" if value else "no") if isinstance(value, bool) else value))
    return rows


def render_env(marker: str, comment: str, variables: Iterable[Tuple[str, Any]]) -> str:
    """An environment file: the header and marker, a comment, then KEY="value" lines in the given order."""
    out = [HEADER, marker, "# " + comment]
    out += ["%s=%s" % (key, env_quote(value)) for key, value in variables]
    return "\n".join(out) + "\n"


def server_unit(instance: Dict[str, Any], model: Dict[str, Any], settings: Dict[str, Any]) -> Dict[str, Any]:
    """Unit and env file of one model server instance.

    ``instance``: a normalized instance of the topology (its ``metrics`` says whether it serves /metrics).
    ``settings``: launch_command, numa_binding, numactl_path, user, group, home,
    config_dir, unit_dir, restart_sec, timeout_stop_sec, start_limit_interval_sec, start_limit_burst,
    limit_nofile, hardening (dict), env (dict: transfer + model environment), fingerprint (dict: sglang, venv,
    model; written first into the env file).
    Returns {name, unit, unit_path, env_file, unit_text, env_text, argv_lines}.
    """
    launch = str(settings["launch_command"]).split()
    lines = server_args(instance, model, settings.get("numa_binding", "numactl"), instance.get("metrics", True))
    numactl = settings.get("numa_binding", "numactl") == "numactl" and instance.get("numa_node") is not None
    if numactl:
        first = [settings["numactl_path"], "--cpunodebind=%s" % instance["numa_node"], "--membind=%s" % instance["numa_node"]]
        lines = [launch] + lines
    else:
        first = launch
    env_file = "%s/%s.env" % (str(settings["config_dir"]).rstrip("/"), instance["name"])
    service = [
        ("Type", "exec"),
        ("User", settings["user"]),
        ("Group", settings["group"]),
        ("WorkingDirectory", settings["home"]),
        ("EnvironmentFile", env_file),
    ]
    exec_line = exec_start(first, lines)
    tail = [
        ("Restart", "on-failure"),
        ("RestartSec", settings["restart_sec"]),
        # SGLang leaves scheduler and tokenizer children: stop the whole cgroup and give it time.
        ("KillMode", "control-group"),
        ("TimeoutStopSec", settings["timeout_stop_sec"]),
        ("LimitMEMLOCK", "infinity"),
        ("LimitNOFILE", settings["limit_nofile"]),
    ]
    hardening = dict(settings.get("hardening") or {})
    text = _render(
        SERVER_MARKER % instance["mode"],
        [
            ("Description", "SGLang %s server %s (tp %s, port %s)" % (instance["mode"], instance["name"],
                                                                      instance["tp_size"], instance["port"])),
            ("Documentation", "https://docs.sglang.ai/"),
            ("After", "network-online.target"),
            ("Wants", "network-online.target"),
            ("StartLimitIntervalSec", settings["start_limit_interval_sec"]),
            ("StartLimitBurst", settings["start_limit_burst"]),
        ],
        service, exec_line, tail, hardening, [("ReadWritePaths", settings["home"])])
    variables = fingerprint_variables(settings.get("fingerprint"))
    if instance.get("gpus"):
        variables.append(("CUDA_VISIBLE_DEVICES", ",".join(str(g) for g in instance["gpus"])))
    merged = dict(settings.get("env") or {})
    merged.update(instance.get("env") or {})
    variables += sorted(merged.items())
    unit_path = "%s/%s" % (str(settings.get("unit_dir", "/etc/systemd/system")).rstrip("/"), instance["unit"])
    env_text = render_env(SERVER_MARKER % instance["mode"],
                          "Environment of %s: what it runs (PDSERVE_*), transfer backend, shared model env, then the "
                          "instance's own env." % instance["unit"], variables)
    return {
        "name": instance["name"],
        "unit": instance["unit"],
        "unit_path": unit_path,
        "env_file": env_file,
        "unit_text": text,
        "env_text": env_text,
        "files": _files(settings, env_file, env_text, unit_path, text),
        "argv_lines": lines if not numactl else lines[1:],
    }


def router_unit(router: Dict[str, Any], workers: Dict[str, List[Dict[str, Any]]], settings: Dict[str, Any]) -> Dict[str, Any]:
    """Unit and env file of the router on one host.

    ``settings``: launch_command, user, group, config_dir, unit_dir, local_units (server units on this
    host to order after), restart_sec, timeout_stop_sec, start_limit_interval_sec, start_limit_burst,
    limit_nofile, hardening, api_key (the secret: only whether it is set reaches the unit), hf_hub_offline,
    hf_endpoint, env, fingerprint (dict: sglang_router, venv), and the router flags of
    serving_cmdline.ROUTER_FLAGS/ROUTER_SWITCHES plus extra_args.
    """
    launch = str(settings["launch_command"]).split()
    with_key = bool(settings.get("api_key"))
    lines = router_args(router, workers, settings, api_key=with_key)
    env_file = "%s/router.env" % str(settings["config_dir"]).rstrip("/")
    order = " ".join(["network-online.target"] + list(settings.get("local_units") or []))
    text = _render(
        ROUTER_MARKER,
        [
            ("Description", "SGLang PD router on %s:%s (%d prefill, %d decode)" % (
                router["host"], router["port"], len(workers.get("prefill") or []), len(workers.get("decode") or []))),
            ("Documentation", "https://docs.sglang.ai/advanced_features/router.html"),
            ("After", order),
            ("Wants", order),
            ("StartLimitIntervalSec", settings["start_limit_interval_sec"]),
            ("StartLimitBurst", settings["start_limit_burst"]),
        ],
        [
            ("Type", "exec"),
            ("User", settings["user"]),
            ("Group", settings["group"]),
            ("EnvironmentFile", env_file),
            ("CacheDirectory", "sglang-router"),
        ],
        exec_start(launch, lines),
        [
            ("Restart", "on-failure"),
            ("RestartSec", settings["restart_sec"]),
            ("KillMode", "control-group"),
            ("TimeoutStopSec", settings["timeout_stop_sec"]),
            ("LimitNOFILE", settings["limit_nofile"]),
        ],
        dict(settings.get("hardening") or {}), [])
    variables = fingerprint_variables(settings.get("fingerprint"))
    variables.append(("HF_HOME", "/var/cache/sglang-router/huggingface"))
    if settings.get("hf_hub_offline"):
        variables.append(("HF_HUB_OFFLINE", "1"))
    if settings.get("hf_endpoint"):
        variables.append(("HF_ENDPOINT", settings["hf_endpoint"]))
    if with_key:
        variables.append((ROUTER_API_KEY_ENV, settings["api_key"]))
    variables += sorted((settings.get("env") or {}).items())
    unit_path = "%s/sglang-router.service" % str(settings.get("unit_dir", "/etc/systemd/system")).rstrip("/")
    env_text = render_env(ROUTER_MARKER, "Environment of sglang-router.service: what it runs (PDSERVE_*), then its "
                          "settings. Mode 0640: it may hold the API key.",
                          variables)
    return {
        "name": "router",
        "unit": "sglang-router.service",
        "unit_path": unit_path,
        "env_file": env_file,
        "unit_text": text,
        "env_text": env_text,
        "files": _files(settings, env_file, env_text, unit_path, text),
        "argv_lines": lines,
    }


def _files(settings, env_file, env_text, unit_path, unit_text):
    """Entries for pdserve.sglang.managed_files: the env file readable by the service group only."""
    return [
        {"path": env_file, "content": env_text, "owner": "root", "group": settings["group"], "mode": "0640"},
        {"path": unit_path, "content": unit_text, "owner": "root", "group": "root", "mode": "0644"},
    ]


def changed_units(units: List[Dict[str, Any]], changed_paths: Iterable[str]) -> List[str]:
    """The unit names whose unit or env file is among ``changed_paths``."""
    changed = set(changed_paths or [])
    return [u["unit"] for u in units if u["unit_path"] in changed or u["env_file"] in changed]


def _render(marker, unit, service, exec_line, tail, hardening, trailing):
    out = [HEADER, marker, "[Unit]"]
    out += ["%s=%s" % (k, v) for k, v in unit]
    out += ["", "[Service]"]
    out += ["%s=%s" % (k, v) for k, v in service]
    out.append(exec_line)
    out += ["%s=%s" % (k, v) for k, v in tail]
    out += ["%s=%s" % (k, v) for k, v in _hardening(hardening)]
    out += ["%s=%s" % (k, v) for k, v in trailing]
    out += ["", "[Install]", "WantedBy=multi-user.target"]
    return "\n".join(out) + "\n"
