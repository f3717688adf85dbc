"""NodeShards: the list (scheduler, mode, desired / in use counts, to add / remove) and one
shard's page (its nodes linked, the policy, the staff edit form)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from schedweb.core.models import Node, NodeShard
from schedweb.dashboard.shard_forms import NodeShardEditForm


@login_required
@require_GET
def shard_list(request: HttpRequest) -> HttpResponse:
    """Every shard, by name (one query: shards are few)."""
    return render(request, "dashboard/shards.html", {"page": "shards", "shards": NodeShard.objects.all()})


def _context(request: HttpRequest, shard: NodeShard, form: NodeShardEditForm | None = None) -> dict:
    named = set(shard.nodes_desired) | set(shard.nodes_in_use)
    known = set(Node.objects.filter(name__in=named).values_list("name", flat=True))
    in_use = set(shard.nodes_in_use)
    rows = [{"name": n, "known": n in known, "desired": n in shard.nodes_desired, "in_use": n in in_use}
            for n in sorted(named)]
    if form is None and request.user.is_staff:
        form = NodeShardEditForm(shard=shard)
    return {"page": "shards", "shard": shard, "rows": rows, "form": form}


@login_required
@require_GET
def shard_detail(request: HttpRequest, name: str) -> HttpResponse:
    """One shard: each node it names (desired, in use, linked when it exists), its policy."""
    return render(request, "dashboard/shard_detail.html",
                  _context(request, get_object_or_404(NodeShard, name=name)))


@login_required
@require_POST
def shard_edit(request: HttpRequest, name: str) -> HttpResponse:
    """Save the edit form (staff); on errors the page again with them (400)."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff change NodeShards.")
    shard = get_object_or_404(NodeShard, name=name)
    form = NodeShardEditForm(request.POST, shard=shard, actor=request.user)
    if form.is_valid():
        messages.success(request, f"NodeShard {name} saved.")
        return redirect("dashboard:shard", name=name)
    return render(request, "dashboard/shard_detail.html", _context(request, shard, form), status=400)


def node_shards(node_name: str) -> list[dict]:
    """The shards naming a node: [{shard, desired, in_use}] (the node page's line)."""
    out = []
    for shard in NodeShard.objects.order_by("name"):
        desired, in_use = node_name in shard.nodes_desired, node_name in shard.nodes_in_use
        if desired or in_use:
            out.append({"shard": shard, "desired": desired, "in_use": in_use})
    return out
