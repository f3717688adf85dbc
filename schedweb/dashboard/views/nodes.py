"""Nodes: table with allocation, task counts, taints, labels, usage freshness; utilisation heatmap;
and one node's page (schedweb.dashboard.node_page)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from schedweb.core.models import Node
from schedweb.dashboard import node_page
from schedweb.dashboard.charts import node_heatmap
from schedweb.dashboard.cluster import load_cluster
from schedweb.dashboard.views.shards import node_shards


@login_required
@require_GET
def nodes(request: HttpRequest) -> HttpResponse:
    """All nodes (two queries) and the heatmap figure embedded as JSON."""
    cluster = load_cluster()
    return render(request, "dashboard/nodes.html", {"page": "nodes", "cluster": cluster,
                                                    "heatmap": node_heatmap(cluster)})


@login_required
@require_GET
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    """One node: allocatable and held, its tasks (paged, ?page=), and why waiting jobs pass it by."""
    node = get_object_or_404(Node, name=name)
    figures = node_page.node_figures(node)
    return render(request, "dashboard/node_detail.html", {
        "page": "nodes", "node": node, "figures": figures, "rows": figures.rows(),
        "tasks": node_page.node_tasks(node, request.GET.get("page")),
        "waiting": node_page.waiting_failures(node, figures),
        "usage_fresh": node_page.usage_fresh(node, timezone.now()),
        "shards": node_shards(node.name),
    })
