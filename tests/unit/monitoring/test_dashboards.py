# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The role's Grafana dashboards: generated (and regenerable), valid, on the grid, every expression parses, and
every metric a panel or an alert uses exists in the pinned versions (and in the emulator, for SGLang's)."""

import importlib.util
import json
import os

import pytest

import metric_names
from monitoring_paths import FIXTURES, ROOT

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import rules as mr

DASHBOARDS = os.path.join(ROOT, "roles", "monitoring", "files", "dashboards")
UIDS = {"pdserve-sglang-pd", "pdserve-router", "pdserve-gpu", "pdserve-host"}


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PANEL_QUERIES = _module(os.path.join(FIXTURES, "monitoring", "panel_queries.py"), "pdserve_panel_queries")
BOARDS = PANEL_QUERIES.load(DASHBOARDS)


def test_regenerating_gives_the_committed_files(tmp_path):
    build = _module(os.path.join(ROOT, "scripts", "build_dashboards.py"), "pdserve_build_dashboards")
    written = build.render(str(tmp_path))
    assert sorted(os.path.basename(p) for p in written) == sorted(os.listdir(DASHBOARDS))
    for path in written:
        with open(path, encoding="utf-8") as new, open(os.path.join(DASHBOARDS, os.path.basename(path)),
                                                       encoding="utf-8") as old:
            assert new.read() == old.read(), "%s differs: run scripts/build_dashboards.py" % os.path.basename(path)


def test_the_four_dashboards_with_fixed_uids():
    assert set(BOARDS) == UIDS
    for name in os.listdir(DASHBOARDS):
        with open(os.path.join(DASHBOARDS, name), encoding="utf-8") as handle:
            text = handle.read()
        assert "<<<<<<<" not in text and ">>>>>>>" not in text
        board = json.loads(text)
        assert name == board["uid"] + ".json"
        assert board.get("id") is None, "a fixed id would clash in Grafana"


@pytest.mark.parametrize("uid", sorted(UIDS))
def test_panel_ids_unique_and_panels_within_the_grid(uid):
    board = BOARDS[uid]
    ids = [p["id"] for p in PANEL_QUERIES.panels(board)]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids), ids
    cells = {}
    for panel in PANEL_QUERIES.panels(board):
        pos = panel["gridPos"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] >= 0 and pos["y"] >= 0, panel["title"]
        assert pos["x"] + pos["w"] <= 24, "%s: beyond the 24 columns" % panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, "%s overlaps %s" % (panel["title"], cells[(x, y)])
                cells[(x, y)] = panel["title"]


@pytest.mark.parametrize("uid", sorted(UIDS))
def test_datasource_is_the_variable_everywhere(uid):
    board = BOARDS[uid]
    variables = dict((v["name"], v) for v in board["templating"]["list"])
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["datasource"]["current"]["value"] == "pdserve-prometheus"
    for panel in PANEL_QUERIES.panels(board):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel.get("description"), "%s: say where the data comes from" % panel["title"]
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))
        for target in panel["targets"]:
            assert target.get("expr") and target.get("refId")
            assert target.get("datasource", panel["datasource"]) == panel["datasource"]
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"]["uid"] == "${datasource}"


def _dashboard_exprs():
    out = []
    for uid, board in sorted(BOARDS.items()):
        for title, ref, expr in PANEL_QUERIES.targets(board):
            out.append(("%s/%s/%s" % (uid, title, ref), PANEL_QUERIES.substitute(expr)))
        for variable in board["templating"]["list"]:
            if variable["type"] == "query":
                selector = metric_names.variable_selector(variable["query"])
                assert selector, "%s: variable %s is not label_values(...)" % (uid, variable["name"])
                out.append(("%s/$%s" % (uid, variable["name"]), PANEL_QUERIES.substitute(selector)))
    return out


def _rule_exprs():
    params = {"runbook_url": "https://x.example/runbook.md", "scrape_interval": 15, "router_health_check_interval": 60,
              "health_window_intervals": 3, "expected_gpus": {"h": 8}}
    return [("%s/%s" % (g["name"], r.get("alert") or r.get("record")), r["expr"])
            for _stem, g in mr.rule_groups(params) for r in g["rules"]]


EXPRS = _dashboard_exprs() + _rule_exprs()


@pytest.mark.parametrize("where, expr", EXPRS, ids=[w for w, _e in EXPRS])
def test_every_expression_parses(where, expr):
    if where.split("/")[-1] in mr.ALWAYS_FIRING:
        # The dead man's switch reads no metric on purpose (vector(1)); it must still parse.
        assert metric_names.parse(expr) is not None and metric_names.names(expr) == []
        return
    assert metric_names.names(expr), "%s uses no metric" % where


def test_every_metric_exists_in_the_pinned_versions():
    lists = metric_names.known()
    missing = dict((where, metric_names.unknown(metric_names.names(expr), lists)) for where, expr in EXPRS)
    missing = dict((k, v) for k, v in missing.items() if v)
    assert not missing, missing


def test_every_router_metric_exists_behind_either_router_implementation():
    """The monitoring's router rules and dashboard work behind sglang-router 0.3.2 and smg 1.13 alike
    (sglang_router_implementation): every smg_* name they read is in both routers' lists, not only in one."""
    used = set(n for _w, expr in EXPRS for n in metric_names.names(expr) if n.startswith("smg_"))
    assert used
    for listing in ("sglang-router-0.3.2.txt", "smg-1.13.0.txt"):
        assert sorted(used - metric_names.router_names(listing)) == [], listing


def test_the_emulator_serves_every_sglang_metric_used():
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
    from sglemu import metrics
    served = set()
    for name, spec in metrics.CATALOG.items():
        served.update([name] if spec[0] != "histogram" else [name + s for s in ("_bucket", "_sum", "_count")])
    used = set(n for _w, expr in EXPRS for n in metric_names.names(expr) if n.startswith("sglang:"))
    assert used and used - served == set()


def test_names_check_can_fail():
    assert metric_names.unknown(metric_names.names("rate(sglang:num_waiting_reqs[5m])")) == ["sglang:num_waiting_reqs"]
    assert metric_names.unknown(metric_names.names('smg_http_responses_total{status="500"}')) == []
    with pytest.raises(ValueError):
        metric_names.parse("rate(up[$__rate_interval])")


def test_the_start_times_per_instance_are_shown():
    """Issue 20: where each instance's start went, from the gauges SGLang sets once its engine is up."""
    panels = dict((p["title"], p) for p in PANEL_QUERIES.panels(BOARDS["pdserve-sglang-pd"]))
    last = [t["expr"] for t in panels["Last start per instance (engine up)"]["targets"]]
    phases = [t["expr"] for t in panels["Start-up phases per instance"]["targets"]]
    assert last == ['max by (host, sglang_instance, engine_type) (sglang:startup_time_seconds{phase="tokenizer_e2e", '
                    'model_name=~"$model_name", host=~"$host"})']
    assert any("sglang:startup_cuda_graph_time_seconds" in e for e in phases)
    assert any('phase=~"load_weight|kv_cache_allocation"' in e for e in phases)
