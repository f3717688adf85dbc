"""Nodes: table with allocation, task counts, taints, labels, usage freshness; utilisation heatmap."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from schedweb.dashboard.charts import node_heatmap
from schedweb.dashboard.cluster import load_cluster


@login_required
@require_GET
def nodes(request: HttpRequest) -> HttpResponse:
    """All nodes (two queries) and the heatmap figure embedded as JSON."""
    cluster = load_cluster()
    return render(request, "dashboard/nodes.html", {"page": "nodes", "cluster": cluster,
                                                    "heatmap": node_heatmap(cluster)})
