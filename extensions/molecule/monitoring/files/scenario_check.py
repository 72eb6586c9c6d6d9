# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The monitoring scenario's checks, run inside the container (system Python, standard library only) so each is
one round trip: bounded load through the router, injected PD failures, every panel query, the scraped names, and
alerts that fire and clear. Each subcommand prints JSON and exits 1 when its check fails."""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import panel_queries  # noqa: E402  (copied next to this file)

MODEL = "deepseek-v4-flash"
QUESTIONS = ["What is 17*23? Number only.", "What is 6*7?", "Tell me about yourself.", "What is 120/4?"]


# The router's client key (--api-key-file): the router answers 401 without it.
ROUTER_HEADERS = {}


def http(method, url, body=None, timeout=30, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return None, str(exc)


def chat(router, index):
    body = {"model": MODEL, "messages": [{"role": "user", "content": QUESTIONS[index % len(QUESTIONS)]}],
            "max_tokens": 32, "stream": index % 2 == 1}
    if index % 3 == 0:
        body["chat_template_kwargs"] = {"thinking": True}
    status, text = http("POST", router + "/v1/chat/completions", body, headers=ROUTER_HEADERS)
    ok = status == 200 and ("[DONE]" in text if body["stream"] else '"choices"' in text) and '"error"' not in text
    return {"status": status, "stream": body["stream"], "ok": ok}


def traffic(args):
    """Bounded load (count and time capped), then one KV-transfer and one bootstrap failure."""
    started = time.monotonic()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        futures = [pool.submit(chat, args.router, i) for i in range(args.requests)]
        for future in futures:
            results.append(future.result(timeout=max(1.0, args.seconds - (time.monotonic() - started))))
    faults = []
    for server, fault in ((args.decode, "kv_transfer"), (args.prefill, "bootstrap")):
        status, text = http("POST", server + "/emulator/faults", {fault: 1})
        outcome = chat(args.router, 0)
        pending = json.loads(http("GET", server + "/emulator/faults")[1])["pending"]
        faults.append({"server": server, "fault": fault, "inject_status": status, "request": outcome,
                       "pending_after": pending.get(fault)})
    out = {"requests": len(results), "ok": sum(r["ok"] for r in results),
           "streaming": sum(r["stream"] for r in results), "seconds": round(time.monotonic() - started, 1),
           "faults": faults}
    good = out["ok"] == out["requests"] and all(f["inject_status"] == 200 and f["request"]["ok"] and
                                                f["pending_after"] == 0 for f in faults)
    return out, good


def query(prometheus, expr):
    status, text = http("GET", "%s/api/v1/query?%s" % (prometheus, urllib.parse.urlencode({"query": expr})))
    data = json.loads(text) if status == 200 else {}
    return data.get("data", {}).get("result") or []


def wait_for(what, predicate, timeout, interval=1.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def counters(args):
    """The injected failures reached Prometheus under SGLang's names, from both servers."""
    out = {}
    for name in ("sglang:num_transfer_failed_reqs_total", "sglang:num_bootstrap_failed_reqs_total"):
        series = wait_for(name, lambda n=name: [s for s in query(args.prometheus, n) if float(s["value"][1]) >= 1]
                          and len(query(args.prometheus, n)) == 2, args.timeout)
        found = query(args.prometheus, name)
        out[name] = sorted((s["metric"].get("engine_type"), float(s["value"][1])) for s in found)
        if not series:
            return out, False
    out["underscore_names"] = [s["metric"]["__name__"] for s in
                               query(args.prometheus, 'group by (__name__) ({__name__=~"sglang_.+"})')]
    return out, not out["underscore_names"]


def panels(args):
    """Every panel query returns data. A series that appeared with the injected failures has one sample right
    after them, too few for rate(): give the next scrapes a few seconds."""
    with open(args.no_data, encoding="utf-8") as handle:
        declared = json.load(handle)
    # A declaration may hold behind one router implementation only (its "implementations"): behind the others the
    # panel must return data.
    implementation = getattr(args, "router_implementation", None) or "sglang-router"
    declared = [d for d in declared if implementation in d.get("implementations", [implementation])]
    deadline = time.monotonic() + args.timeout
    while True:
        result = panel_queries.check(args.dashboards, args.prometheus, declared)
        good = not result["failed"] and not result["empty"] and result["checked"] > 50
        if good or time.monotonic() >= deadline:
            return result, good
        time.sleep(2)


def used_names(sources, prefix):
    """Metric names with ``prefix`` in the dashboards' queries and the rule files' expressions."""
    exprs = []
    for folder in sources:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(".json"):
                with open(path, encoding="utf-8") as handle:
                    board = json.load(handle)
                exprs += [e for dummy_t, dummy_r, e in panel_queries.targets(board)]
                exprs += [v.get("query") or "" for v in board["templating"]["list"]]
            else:
                with open(path, encoding="utf-8") as handle:
                    exprs += [line.split("expr:", 1)[1] for line in handle if line.strip().startswith("expr:")]
    return sorted(set(n for e in exprs for n in re.findall(r"\b(%s_[a-zA-Z0-9_]+)" % prefix, e)))


def names(args):
    """Every node_*/prometheus_* name the dashboards and rules use is in the live scrape; keeps that scrape for the
    committed lists (tests/unit/fixtures/metrics/scraped_metrics.py)."""
    used = used_names(args.sources, args.prefix)
    status, text = http("GET", args.url)
    live = sorted(set(m.group(1) for m in (re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", line)
                                           for line in text.splitlines() if not line.startswith("#")) if m))
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(text)
    missing = sorted(set(used) - set(live))
    return {"used": used, "live": len(live), "missing": missing, "status": status}, status == 200 and \
        bool(used) and not missing


def firing(prometheus, selectors):
    return dict((sel, bool(query(prometheus, 'ALERTS{alertstate="firing", %s}' % sel))) for sel in selectors)


def alerts(args):
    """Stop a unit: the expected alerts fire; start it: they clear."""
    subprocess.run(["systemctl", "stop", args.unit], check=True)
    t0 = time.monotonic()
    fired = wait_for("fire", lambda: all(firing(args.prometheus, args.expect).values()), args.timeout)
    t_fired = time.monotonic() - t0
    state_fired = firing(args.prometheus, args.expect)
    subprocess.run(["systemctl", "start", args.unit], check=True)
    t1 = time.monotonic()
    cleared = wait_for("clear", lambda: not any(firing(args.prometheus, args.expect).values()), args.timeout)
    out = {"fired": state_fired, "seconds_to_fire": round(t_fired, 1),
           "cleared": not any(firing(args.prometheus, args.expect).values()),
           "seconds_to_clear": round(time.monotonic() - t1, 1)}
    return out, bool(fired) and bool(cleared)


def last_reload(args):
    """The time of Prometheus' last successful configuration reload (a reload moves it, nothing else)."""
    found = query(args.prometheus, "prometheus_config_last_reload_success_timestamp_seconds")
    return (found[0]["value"][1] if found else None), bool(found)


def everything(args):
    """The in-container checks in order, in one round trip: traffic and faults, counters, panels, names, alerts."""
    out = {}
    steps = [
        ("traffic", traffic, dict(router=args.router, prefill=args.prefill, decode=args.decode, requests=args.requests,
                                  concurrency=4, seconds=90)),
        ("counters", counters, dict(prometheus=args.prometheus, timeout=30)),
        ("panels", panels, dict(prometheus=args.prometheus, dashboards=args.dashboards, no_data=args.no_data, timeout=30,
                                router_implementation=args.router_implementation)),
        ("node_names", names, dict(url="http://127.0.0.1:9100/metrics", prefix="node", sources=args.sources,
                                   output=os.path.join(args.scrapes, "node.txt"))),
        ("prometheus_names", names, dict(url=args.prometheus + "/metrics", prefix="prometheus", sources=args.sources,
                                         output=os.path.join(args.scrapes, "prometheus.txt"))),
        ("alerts", alerts, dict(prometheus=args.prometheus, unit=args.unit, timeout=90, expect=args.expect)),
    ]
    for name, step, kwargs in steps:
        started = time.monotonic()
        result, good = step(argparse.Namespace(**kwargs))
        out[name] = {"ok": good, "seconds": round(time.monotonic() - started, 1), "result": result}
        if not good:
            return out, False
    return out, True


def main(argv=None):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("traffic")
    p.add_argument("--router", required=True)
    p.add_argument("--api-key-file", help="file holding the router's client key (read as root: no key on argv)")
    p.add_argument("--prefill", required=True)
    p.add_argument("--decode", required=True)
    p.add_argument("--requests", type=int, default=24)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--seconds", type=float, default=90)
    p = sub.add_parser("counters")
    p.add_argument("--prometheus", required=True)
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("panels")
    p.add_argument("--prometheus", required=True)
    p.add_argument("--dashboards", required=True)
    p.add_argument("--no-data", required=True)
    p.add_argument("--router-implementation", default="sglang-router",
                   help="sglang_router_implementation of the stack (no-data declarations may name theirs)")
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("names")
    p.add_argument("--url", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("sources", nargs="+")
    p = sub.add_parser("alerts")
    p.add_argument("--prometheus", required=True)
    p.add_argument("--unit", required=True)
    p.add_argument("--timeout", type=float, default=90)
    p.add_argument("expect", nargs="+", help='label selectors of ALERTS, e.g. alertname="SGLangServerDown"')
    p = sub.add_parser("all")
    p.add_argument("--router", required=True)
    p.add_argument("--api-key-file", help="file holding the router's client key (read as root: no key on argv)")
    p.add_argument("--prefill", required=True)
    p.add_argument("--decode", required=True)
    p.add_argument("--requests", type=int, default=24)
    p.add_argument("--prometheus", required=True)
    p.add_argument("--dashboards", required=True)
    p.add_argument("--no-data", required=True)
    p.add_argument("--router-implementation", default="sglang-router",
                   help="sglang_router_implementation of the stack (no-data declarations may name theirs)")
    p.add_argument("--scrapes", required=True)
    p.add_argument("--unit", required=True)
    p.add_argument("--rules", required=True)
    p.add_argument("expect", nargs="+")
    p = sub.add_parser("last-reload")
    p.add_argument("--prometheus", default="http://127.0.0.1:9090")
    args = parser.parse_args(argv)
    if getattr(args, "api_key_file", None):
        with open(args.api_key_file, encoding="utf-8") as handle:
            ROUTER_HEADERS["Authorization"] = "Bearer " + handle.read().strip()
    if args.command == "all":
        args.sources = [args.dashboards, args.rules]
    out, good = {"all": everything, "last-reload": last_reload, "traffic": traffic, "counters": counters, "panels": panels, "names": names,
                 "alerts": alerts}[args.command](args)
    print(out if isinstance(out, str) else json.dumps(out, indent=1, sort_keys=True))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
