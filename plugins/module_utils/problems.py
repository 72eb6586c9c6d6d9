# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Problems found in an inventory or on a host: ``{host, variable, message, fix}`` dicts.

Every check of the collection reports with these, so an operator always reads which host, which
variable, what is wrong and what to do, and a playbook can list all of them at once.
"""

import difflib
import re
from typing import Any, Dict, Iterable, List, Optional

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def problem(host: Any, variable: Optional[str], message: str, fix: Optional[str]) -> Dict[str, Any]:
    """One problem. ``variable`` names what to change (``sglang_decode_instances[decode].port``)."""
    return {"host": host, "variable": variable, "message": message, "fix": fix}


def env_problems(host: Any, variable: str, env: Dict[Any, Any]) -> List[Dict[str, Any]]:
    """Problems of an environment mapping that is already a dict: names systemd and the shell accept, and
    values that fit one line of an environment file (a newline or NUL cannot be written there as such)."""
    problems = []
    for name in sorted(env, key=str):
        value = env[name]
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            problems.append(problem(host, "%s.%s" % (variable, name), "is not a valid environment variable name",
                                    "use letters, digits and underscores, not starting with a digit"))
        elif isinstance(value, str) and ("\n" in value or "\r" in value or "\0" in value):
            problems.append(problem(host, "%s.%s" % (variable, name), "holds a line break or NUL character",
                                    "an environment file takes one line per variable: put the value on one line"))
    return problems


def line(item: Dict[str, Any]) -> str:
    """One readable line: ``host H: VARIABLE: message; fix``."""
    text = "host %s: " % item.get("host")
    if item.get("variable"):
        text += "%s: " % item["variable"]
    text += item.get("message") or ""
    if item.get("fix"):
        text += "; %s" % item["fix"]
    return text


def report(items: List[Dict[str, Any]], what: str = "preflight") -> str:
    """The failure message for a list of problems: a count, then one line each."""
    lines = [line(item) for item in items]
    return "%s found %d problem(s):\n- %s" % (what, len(lines), "\n- ".join(lines))


def unique(items: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The problems without repeats, in their first order."""
    seen = set()
    result = []
    for item in items:
        key = (item.get("host"), item.get("variable"), item.get("message"), item.get("fix"))
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def suggest(name: Any, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(str(name), list(choices), n=1, cutoff=0.6)
    return " (did you mean %r?)" % close[0] if close else ""
