# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Why a venv step of the sglang_install role failed, in words an operator acts on (filter install_failure).

Pure: ``explain()`` takes the failed task's result (a ``python -m venv`` or ``pip install``), the venv's disk entry as
``install_facts`` measured it after the failure, and the pip settings, and names the cause it can see: a full
filesystem (which one, and its free space) or a package index that stopped answering (which one, after how many
retries), else pip's last lines.
"""

import re
from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.install.plan import filesystem_label, free_label

# What pip (and ensurepip under ``python -m venv``) print when a write fails for lack of space.
NO_SPACE_RE = re.compile(r"No space left on device|\[Errno 28\]|ENOSPC|Disk quota exceeded|\[Errno 122\]")
# A filesystem with less than this free after a failed step is full for any practical purpose (``python -m venv``
# reports a failed ensurepip without saying why).
NEARLY_FULL_BYTES = 16 * 2 ** 20
# What pip prints when the index does not answer: urllib3's retries and their final error.
INDEX_RES = (
    re.compile(r"Max retries exceeded"),
    re.compile(r"Read timed out|ReadTimeoutError|ConnectTimeoutError|timed out"),
    re.compile(r"Connection refused|NewConnectionError|Connection reset|RemoteDisconnected|ProtocolError"),
    re.compile(r"IncompleteRead|Connection broken"),
    re.compile(r"Could not fetch URL"),
    re.compile(r"Temporary failure in name resolution|Name or service not known"),
)
RETRYING_RE = re.compile(r"Retrying \(Retry\(total=")
URL_RE = re.compile(r"^(https?)://", re.IGNORECASE)
POOL_RE = re.compile(r"HTTPS?ConnectionPool\(host='([^']+)', port=(\d+)\)")
NEXT_RUN = ("The run stopped before any server was restarted or moved to this venv. The venv is marked incomplete (%s): "
            "the next run installs it again.")


def _text(result: Dict[str, Any]) -> str:
    return "\n".join(str(result.get(key) or "") for key in ("stdout", "stderr", "msg"))


def _tail(result: Dict[str, Any], lines: int) -> List[str]:
    """The last lines pip printed, errors (stderr) last."""
    out = [line for key in ("stdout", "stderr") for line in str(result.get(key) or "").splitlines() if line.strip()]
    if not out and result.get("msg"):
        out = [str(result["msg"])]
    return out[-lines:]


def index_urls(pip_args: List[str]) -> List[str]:
    """The network places pip was told to read (``--index-url``, ``--extra-index-url``, ``--find-links`` URLs)."""
    found = []
    args = [str(arg) for arg in pip_args or []]
    for index, arg in enumerate(args):
        value = None
        if arg in ("--index-url", "-i", "--extra-index-url", "--find-links", "-f") and index + 1 < len(args):
            value = args[index + 1]
        elif "=" in arg and arg.split("=", 1)[0] in ("--index-url", "--extra-index-url", "--find-links"):
            value = arg.split("=", 1)[1]
        if value and URL_RE.match(value) and value not in found:
            found.append(value)
    return found


# Why a request to the index failed, in the words of the socket layer, most telling first.
REASONS = ("Read timed out", "Connection refused", "Connection reset by peer", "Remote end closed connection",
           "Temporary failure in name resolution", "Name or service not known", "No route to host", "timed out",
           "IncompleteRead", "Connection broken")
RETRY_PATH_RE = re.compile(r"'\)*:\s*(/\S*)\s*$")


def _reason(line: str) -> str:
    for reason in REASONS:
        if reason in line:
            return reason
    return ""


def index_trouble(text: str) -> str:
    """What pip met at the index: ``3 tries failed (Read timed out on /simple/x/); ERROR: ...`` from its output."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    retries = [line for line in lines if RETRYING_RE.search(line)]
    errors = [line for line in lines if line.startswith("ERROR:")]
    parts = []
    if retries:
        path = RETRY_PATH_RE.search(retries[-1])
        reasons = []
        for line in retries:
            reason = _reason(line)
            if reason and reason not in reasons:
                reasons.append(reason)
        count = "%d retr%s" % (len(retries), "y" if len(retries) == 1 else "ies")
        where = (" on " + path.group(1)) if path else ""
        parts.append("%s (%s%s)" % (count, ", then ".join(reasons) or "no answer", where))
    if errors:
        # urllib3's "(Caused by ReadTimeoutError(...))" repeats the retries' reason at length: the reason alone.
        error = errors[-1]
        caused = error.find(" (Caused by ")
        if caused > 0:
            reason = _reason(error[caused:])
            error = error[:caused] + ((" (%s)" % reason) if reason else "")
        parts.append(error)
    return "; ".join(parts)


def cause(result: Dict[str, Any], disk_entry: Optional[Dict[str, Any]]) -> str:
    """``disk``, ``index`` or ``other``."""
    text = _text(result)
    free = (disk_entry or {}).get("free_bytes")
    if NO_SPACE_RE.search(text) or (free is not None and free < NEARLY_FULL_BYTES):
        return "disk"
    if RETRYING_RE.search(text) or any(regex.search(text) for regex in INDEX_RES):
        return "index"
    return "other"


def explain(result: Dict[str, Any], host: str, venv: str, disk_entry: Optional[Dict[str, Any]], pip_args: List[str],
            retries: Any, timeout: Any, marker: str, tail_lines: int = 8) -> str:
    """The message of the role's failure after a venv step failed (see the module docstring)."""
    result = result or {}
    what = "pip" if "pip" in " ".join(str(a) for a in (result.get("cmd") or [])) else "the venv step"
    kind = cause(result, disk_entry)
    text = _text(result)
    tail = _tail(result, tail_lines)
    if kind == "disk":
        entry = disk_entry or {}
        head = "%s could not write %s on %s: no space left on %s, %s free now%s." % (
            what, venv, host, filesystem_label(entry) if entry else "its filesystem",
            free_label(entry) if entry else "?",
            "" if NO_SPACE_RE.search(text) else " (the step did not say why it failed; the filesystem is full)")
        fix = "Free space there (or put sglang_install_venv on a larger filesystem), then run again."
    elif kind == "index":
        urls = index_urls(pip_args)
        pools = sorted(set("%s:%s" % match for match in POOL_RE.findall(text)))
        where = ", ".join(urls) or ", ".join(pools) or "of pip's own configuration"
        head = ("%s on %s could not download from the package index %s: it stopped answering, and pip gave up after "
                "at most %s retries per request (%s s timeout each; sglang_install_pip_retries, sglang_install_pip_timeout). "
                "pip saw: %s."
                % (what, host, where, retries, timeout, index_trouble(text) or (tail[-1] if tail else "no output")))
        fix = ("Bring the index back (or point sglang_install_index_url or sglang_install_wheelhouse at one that "
               "answers), then run again.")
    else:
        head = "%s failed on %s (rc %s) installing into %s." % (what, host, result.get("rc", "?"), venv)
        fix = "Fix what pip says below, then run again."
    return "\n".join([head, NEXT_RUN % marker, fix, "Last lines:"] + ["  " + line for line in tail])
