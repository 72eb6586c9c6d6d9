# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is a Prometheus doing its job: ready, every expected target up, every rule healthy, SGLang's names stored with
their colon. Pure judgements of its HTTP API's answers, plus a poller that waits for all of them."""

import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import excerpt, join_url

UNDERSCORE_QUERY = 'group by (__name__) ({__name__=~"sglang_.+"})'
COLON_QUERY = 'count({__name__=~"sglang:.+"})'


def judge_targets(active: Optional[Iterable[Dict[str, Any]]], expected: Iterable[Dict[str, Any]]
                  ) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(up, down, missing)``: expected targets that are up, those Prometheus has but not up (with its last error),
    and those it does not scrape at all. A target is matched by job and address."""
    by_key = {}
    for target in active or []:
        labels = target.get("labels") or {}
        address = (target.get("discoveredLabels") or {}).get("__address__") or labels.get("instance")
        by_key[(labels.get("job"), address)] = target
    up, down, missing = [], [], []
    for want in expected:
        key = (want.get("job"), want.get("address"))
        have = by_key.get(key)
        entry = {"job": key[0], "address": key[1], "host": (want.get("labels") or {}).get("host")}
        if have is None:
            missing.append(entry)
        elif have.get("health") == "up":
            up.append(entry)
        else:
            entry.update(health=have.get("health"), last_error=have.get("lastError") or "")
            down.append(entry)
    return up, down, missing


def judge_rules(groups: Optional[Iterable[Dict[str, Any]]]) -> Tuple[int, List[Dict[str, Any]]]:
    """``(total, bad)``: rules of every group, and those whose health is not ok (unknown before a first
    evaluation, err after a failed one)."""
    total, bad = 0, []
    for group in groups or []:
        for rule in group.get("rules") or []:
            total += 1
            if rule.get("health") != "ok":
                bad.append({"group": group.get("name"), "file": group.get("file"), "rule": rule.get("name"),
                            "health": rule.get("health"), "last_error": rule.get("lastError") or ""})
    return total, bad


def _vector(answer):
    if not isinstance(answer, dict) or answer.get("status") != "success":
        return None
    return answer.get("data", {}).get("result") or []


def describe(state: Dict[str, Any]) -> str:
    """The failure message: what is not right, naming each target."""
    parts = []
    if not state.get("ready"):
        parts.append("Prometheus at %s is not ready (%s)" % (state.get("url"), state.get("last_status")))
    for t in state.get("down") or []:
        parts.append("target %s %s (host %s) is %s: %s" % (t["job"], t["address"], t.get("host"), t.get("health"),
                                                           excerpt(t.get("last_error"), 200) or "no error given"))
    for t in state.get("missing") or []:
        parts.append("target %s %s (host %s) is not scraped (not in /api/v1/targets)" % (t["job"], t["address"],
                                                                                         t.get("host")))
    for r in state.get("rules_bad") or []:
        parts.append("rule %s of group %s is %s%s" % (r["rule"], r["group"], r["health"],
                                                      (": " + excerpt(r["last_error"], 200)) if r["last_error"] else ""))
    if state.get("sglang_underscore_names"):
        parts.append("series stored with '_' instead of SGLang's ':' (the sglang_ relabel rule is missing from the "
                     "scrape jobs): %s" % ", ".join(state["sglang_underscore_names"][:10]))
    if state.get("expect_colon") and not state.get("sglang_colon_series"):
        parts.append("no sglang:* series stored although SGLang servers are scraped")
    return "; ".join(parts)


class PrometheusCheck(object):
    """Probe a Prometheus until it is ready, every expected target is up and every rule healthy."""

    def __init__(self, client, url, expected, check_names=True, clock=time.monotonic, sleep=time.sleep):
        self.client = client
        self.url = url.rstrip("/")
        self.expected = list(expected or [])
        self.check_names = check_names
        self.clock = clock
        self.sleep = sleep

    def _api(self, path):
        answer = self.client.get(join_url(self.url, path))
        return answer.json() if answer.ok else None, answer

    def once(self) -> Dict[str, Any]:
        sglang_jobs = [t for t in self.expected if t.get("job") in ("sglang-prefill", "sglang-decode")]
        state = {"url": self.url, "ready": False, "up": [], "down": [], "missing": [], "rules_total": 0,
                 "rules_bad": [], "sglang_underscore_names": [], "sglang_colon_series": 0,
                 "expect_colon": bool(self.check_names and sglang_jobs)}
        answer = self.client.get(join_url(self.url, "/-/ready"))
        state["last_status"] = answer.summary("/-/ready")
        if not answer.ok:
            state["missing"] = [{"job": t.get("job"), "address": t.get("address"),
                                 "host": (t.get("labels") or {}).get("host")} for t in self.expected]
            return state
        state["ready"] = True
        targets, answer = self._api("/api/v1/targets?state=active")
        active = (targets or {}).get("data", {}).get("activeTargets") if targets else None
        state["up"], state["down"], state["missing"] = judge_targets(active, self.expected)
        rules, answer = self._api("/api/v1/rules")
        groups = (rules or {}).get("data", {}).get("groups") if rules else None
        state["rules_total"], state["rules_bad"] = judge_rules(groups)
        if rules is None:
            state["rules_bad"].append({"group": "-", "file": None, "rule": "/api/v1/rules", "health": "unreadable",
                                       "last_error": answer.summary("/api/v1/rules")})
        if self.check_names:
            found, dummy = self._api("/api/v1/query?query=%s" % _quote(UNDERSCORE_QUERY))
            state["sglang_underscore_names"] = sorted(
                s.get("metric", {}).get("__name__", "") for s in _vector(found) or [])
            found, dummy = self._api("/api/v1/query?query=%s" % _quote(COLON_QUERY))
            values = _vector(found) or []
            state["sglang_colon_series"] = int(float(values[0]["value"][1])) if values else 0
        return state

    @staticmethod
    def done(state: Dict[str, Any]) -> bool:
        return bool(state["ready"] and not state["down"] and not state["missing"] and not state["rules_bad"]
                    and not state["sglang_underscore_names"]
                    and (not state["expect_colon"] or state["sglang_colon_series"] > 0))

    def wait(self, timeout: float, interval: float = 0.25) -> Dict[str, Any]:
        start = self.clock()
        while True:
            state = self.once()
            state["seconds"] = round(self.clock() - start, 2)
            if self.done(state) or self.clock() - start >= timeout:
                state["ok"] = self.done(state)
                return state
            self.sleep(interval)


def _quote(text):
    try:
        from urllib.parse import quote
    except ImportError:  # pragma: no cover (Python 2)
        from urllib import quote
    return quote(text, safe="")
