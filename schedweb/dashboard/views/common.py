"""Helpers shared by the page views: the figures every page starts from, and the ACL view."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest

from schedweb.core.access import QueueAccess, queue_access
from schedweb.dashboard.cluster import Cluster, load_cluster
from schedweb.dashboard.selectors import QueueTree, build_tree
from schedweb.dashboard.units import dims_of


@dataclass
class Figures:
    """Cluster (nodes and totals) and the queue tree with its bars, for one request."""

    cluster: Cluster
    tree: QueueTree


def load_figures() -> Figures:
    """Nodes, queues and the latest samples in a handful of set-based queries."""
    cluster = load_cluster()
    dims = dims_of([cluster.total])
    return Figures(cluster=cluster, tree=build_tree(cluster.total, dims))


def access(request: HttpRequest) -> QueueAccess:
    """The API's ACL object for this request (never reimplemented here)."""
    return queue_access(request)
