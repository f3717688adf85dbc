"""docs/grafana/schedweb.json: every query in it names only metrics a real scrape of /metrics
exports (with samples), under their current names (no deprecated alias)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from schedweb.scheduling.metrics import DEPRECATED_ALIASES

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "schedweb.json"
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan"}
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
LABEL_VALUES = re.compile(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)")
IDENT = re.compile(r"(?<![\w$.])([A-Za-z_:][A-Za-z0-9_:]*)(?![\w:]|\s*\()")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana label_values query) reads."""
    names = set(LABEL_VALUES.findall(expr))
    expr = LABEL_VALUES.sub(" ", expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', " ", expr)      # strings (legends in label matchers)
    expr = re.sub(r"\{[^}]*\}", " ", expr)               # label matchers
    expr = re.sub(r"\[[^\]]*\]", " ", expr)              # range selectors ([5m], [$__rate_interval])
    expr = GROUPING.sub(" ", expr)                        # label lists of by (...), on (...)
    return names | {n for n in IDENT.findall(expr) if n.lower() not in KEYWORDS}


@pytest.mark.parametrize(("expr", "names"), [
    ('histogram_quantile(0.99, sum by (le, action) (rate(x_bucket{a="b"}[$__rate_interval])))', {"x_bucket"}),
    ("rate(a_sum[5m]) / rate(a_count[5m]) * 60", {"a_sum", "a_count"}),
    ('sum(m{queue_name=~"$queue"}) / 1000 and on (q) other', {"m", "other"}),
    ("label_values(volcano_queue_share, queue_name)", {"volcano_queue_share"}),
])
def test_metric_names_of_an_expression(expr, names):
    assert metric_names(expr) == names


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every target expression of every panel (rows' nested panels too) and variable query."""
    out = []
    stack = list(dashboard["panels"])
    while stack:
        panel = stack.pop()
        stack.extend(panel.get("panels", []))
        out.extend(t["expr"] for t in panel.get("targets", []))
    for var in dashboard.get("templating", {}).get("list", []):
        query = var.get("query")
        out.append(query["query"] if isinstance(query, dict) else query)
    return out


def exported_names(text: str) -> set[str]:
    """Names of the samples in an exposition-format scrape."""
    return {re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0) for line in text.splitlines()
            if line and not line.startswith("#")}


@pytest.mark.django_db
def test_every_dashboard_query_names_exported_metrics(client):
    load_demo()
    cycle_run()  # its session's action and plugin timings go to the histograms
    agent_step(now=timezone.now(), period=2)
    exported = exported_names(client.get("/metrics").content.decode())
    dashboard = json.loads(DASHBOARD.read_text())
    queries = dashboard_queries(dashboard)
    assert len(queries) == 35
    used = set().union(*(metric_names(q) for q in queries))
    assert sorted(used - exported) == []
    assert not used & set(DEPRECATED_ALIASES)
    # The panels the issue asks for.
    assert {"volcano_queue_share", "volcano_queue_allocated_milli_cpu", "volcano_queue_deserved_milli_cpu",
            "volcano_queue_allocated_scalar_resources", "schedweb_pending_jobs",
            "volcano_e2e_scheduling_latency_milliseconds_bucket",
            "volcano_action_scheduling_latency_milliseconds_bucket",
            "volcano_plugin_scheduling_latency_milliseconds_bucket",
            "volcano_task_scheduling_latency_milliseconds_bucket",
            "volcano_scheduling_stage_duration_milliseconds_bucket",
            "volcano_open_session_duration_milliseconds_bucket",
            "volcano_eviction_transactions_total", "volcano_total_preemption_attempts",
            "volcano_e2e_job_scheduling_start_time"} <= used


def test_dashboard_is_importable_shape():
    """Unique panel ids, every panel placed on the 24-column grid, the datasource an input."""
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) == 22
    assert all(p["gridPos"]["x"] >= 0 and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
               for p in dashboard["panels"])
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    assert (dashboard["uid"], dashboard["title"]) == ("schedweb-scheduler", "schedweb scheduler")
