# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Metric names of PromQL expressions (promql-parser's AST) and the committed name lists they must be in."""

import json
import os
import re

import promql_parser

HERE = os.path.dirname(os.path.abspath(__file__))
LISTS = os.path.join(HERE, "..", "fixtures", "metrics")
# Prometheus' synthetic series (not in any exposition).
SYNTHETIC = {"up", "ALERTS", "ALERTS_FOR_STATE", "scrape_duration_seconds", "scrape_samples_scraped"}
_LABEL_VALUES = re.compile(r"^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\)$")


def parse(expr):
    """The AST, or raises ValueError with the parser's message."""
    return promql_parser.parse(expr)


def names(expr):
    found = []

    def visit(node):
        if isinstance(node, promql_parser.MatrixSelector):
            node = node.vector_selector
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            found.append(node.name)
        return True
    promql_parser.walk(parse(expr), visit)
    return found


def variable_selector(query):
    """The selector inside a Grafana ``label_values(selector, label)`` variable query."""
    match = _LABEL_VALUES.match(query.strip())
    return match.group(1) if match else None


def _text_list(name):
    with open(os.path.join(LISTS, name), encoding="utf-8") as handle:
        return set(line.strip() for line in handle if line.strip() and not line.startswith("#"))


def router_names(name):
    """Every series name of a router's list (a histogram's base name adds _bucket, _sum and _count)."""
    names = set()
    for base in _text_list(name):
        names.update([base, base + "_bucket", base + "_sum", base + "_count"])
    return names


def known():
    """{source: set of series names} of the pinned versions."""
    with open(os.path.join(LISTS, "sglang-0.5.23.json"), encoding="utf-8") as handle:
        sglang = set(s for m in json.load(handle)["metrics"].values() for s in m["series"])
    return {
        "sglang 0.5.23": sglang,
        "sglang-router 0.3.2": router_names("sglang-router-0.3.2.txt"),
        "smg 1.13.0": router_names("smg-1.13.0.txt"),
        "dcgm-exporter 4.5.3-4.8.2": _text_list("dcgm-exporter-4.5.3-4.8.2.txt"),
        "prometheus-node-exporter 1.5.0": _text_list("node-exporter-1.5.0.txt"),
        "prometheus 2.42.0": _text_list("prometheus-2.42.0.txt"),
        "synthetic": SYNTHETIC,
    }


def unknown(metric_names, lists=None):
    lists = lists or known()
    every = set().union(*lists.values())
    return sorted(set(n for n in metric_names if n not in every))
