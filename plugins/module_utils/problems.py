# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Problems found in an inventory or on a host: ``{host, variable, message, fix}`` dicts.

Every check of the collection reports with these, so an operator always reads which host, which
variable, what is wrong and what to do, and a playbook can list all of them at once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib


def problem(host, variable, message, fix):
    """One problem. ``variable`` names what to change (``sglang_decode_instances[decode].port``)."""
    return {"host": host, "variable": variable, "message": message, "fix": fix}


def line(item):
    """One readable line: ``host H: VARIABLE: message; fix``."""
    text = "host %s: " % item.get("host")
    if item.get("variable"):
        text += "%s: " % item["variable"]
    text += item.get("message") or ""
    if item.get("fix"):
        text += "; %s" % item["fix"]
    return text


def report(items, what="preflight"):
    """The failure message for a list of problems: a count, then one line each."""
    lines = [line(item) for item in items]
    return "%s found %d problem(s):\n- %s" % (what, len(lines), "\n- ".join(lines))


def unique(items):
    """The problems without repeats, in their first order."""
    seen = set()
    result = []
    for item in items:
        key = (item.get("host"), item.get("variable"), item.get("message"), item.get("fix"))
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def suggest(name, choices):
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(str(name), list(choices), n=1, cutoff=0.6)
    return " (did you mean %r?)" % close[0] if close else ""
