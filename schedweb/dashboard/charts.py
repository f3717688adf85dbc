"""Plotly figure specs built on the server; the page only calls Plotly.react with them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from schedweb.dashboard.cluster import Cluster
from schedweb.dashboard.selectors import QueueView
from schedweb.dashboard.units import dim_label, dim_unit, to_display
from schedweb.scheduling.history import queue_history, window

RANGES: dict[str, timedelta | None] = {
    "15m": timedelta(minutes=15), "1h": timedelta(hours=1), "6h": timedelta(hours=6),
    "24h": timedelta(hours=24), "all": None,
}
DEFAULT_RANGE = "1h"
COLORS = {"allocated": "#2f6fdf", "pending": "#f2a33a", "deserved": "#1e9e6a", "guarantee": "#7a5cc7",
          "frame": "#9aa4b2"}
_LAYOUT = {"margin": {"l": 48, "r": 12, "t": 32, "b": 36}, "height": 240, "font": {"size": 12},
           "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)", "showlegend": False}


def dim_key(dim: str) -> str:
    """A DOM-safe key for a resource name (nvidia.com/gpu -> nvidia-com-gpu)."""
    return "".join(c if c.isalnum() else "-" for c in dim)


def current_figure(view: QueueView, dim: str) -> dict[str, Any]:
    """Bars: allocated, pending, deserved, guarantee and the frame (capability) of one resource."""
    bar = next(b for b in view.bars if b.dim == dim)
    names = ["allocated", "pending", "deserved", "guarantee", "frame"]
    values = [bar.allocated, bar.pending, bar.deserved, bar.guarantee, bar.frame]
    labels = ["Allocated", "Pending", "Deserved", "Guarantee", bar.frame_kind.capitalize()]
    return {
        "data": [{"type": "bar", "x": labels, "y": [to_display(dim, v) for v in values],
                  "marker": {"color": [COLORS[n] for n in names]}, "name": dim_label(dim),
                  "hovertemplate": "%{x}: %{y} " + dim_unit(dim) + "<extra></extra>"}],
        "layout": {**_LAYOUT, "title": {"text": f"{dim_label(dim)} now ({dim_unit(dim)})", "x": 0.02},
                   "yaxis": {"rangemode": "tozero"}},
    }


# A history shorter than this (one cycle, a few seconds) is drawn on a window of this width
# centred on it: Plotly's own range would zoom to milliseconds and label them.
MIN_SPAN = timedelta(minutes=2)


def _instant(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def short_span_range(history: list[dict[str, Any]]) -> list[str] | None:
    """The x-axis range [start, end] (ISO) for a history spanning under MIN_SPAN, else None."""
    instants = [t for t in (_instant(h.get("time")) for h in history) if t is not None]
    if not instants:
        return None
    first, last = min(instants), max(instants)
    if last - first >= MIN_SPAN:
        return None
    pad = (MIN_SPAN - (last - first)) / 2
    return [(first - pad).isoformat(), (last + pad).isoformat()]


def history_figure(history: list[dict[str, Any]], dim: str) -> dict[str, Any]:
    """Lines over the cycles: deserved, allocated and request of one resource."""
    times = [h["time"].isoformat() if isinstance(h["time"], datetime) else h["time"] for h in history]
    data = []
    for key, label, dash in (("deserved", "Deserved", "solid"), ("allocated", "Allocated", "solid"),
                             ("request", "Requested", "dot")):
        # Markers too: a range holding a single cycle would otherwise draw nothing.
        data.append({"type": "scatter", "mode": "lines+markers", "name": label, "x": times,
                     "y": [to_display(dim, (h.get(key) or {}).get(dim, 0.0)) for h in history],
                     "line": {"color": COLORS.get(key, "#f2a33a"), "dash": dash, "shape": "hv"},
                     "marker": {"size": 4}})
    layout = {**_LAYOUT, "showlegend": True, "legend": {"orientation": "h", "y": -0.25},
              "title": {"text": f"{dim_label(dim)} over time", "x": 0.02}, "yaxis": {"rangemode": "tozero"}}
    if (span := short_span_range(history)) is not None:
        layout["xaxis"] = {"type": "date", "range": span}
    return {"data": data, "layout": layout}


def queue_charts(view: QueueView, dims: list[str], range_key: str) -> dict[str, Any]:
    """{"range", "samples", "points", "bucket_seconds", "figures": {div id: figure}} for the queue page."""
    key = range_key if range_key in RANGES else DEFAULT_RANGE
    # Downsampled like the API's history endpoint (schedweb.scheduling.history).
    history = queue_history(view.queue.name, window(RANGES[key]))
    figures: dict[str, Any] = {}
    for dim in dims:
        figures[f"chart-{dim_key(dim)}-current"] = current_figure(view, dim)
        figures[f"chart-{dim_key(dim)}-history"] = history_figure(history.points, dim)
    return {"range": key, "samples": history.samples, "points": len(history.points),
            "bucket_seconds": history.bucket_seconds, "figures": figures}


def node_heatmap(cluster: Cluster) -> dict[str, Any]:
    """Utilisation heatmap: one row per resource, one column per node, percent allocated."""
    names = [row.node.name for row in cluster.nodes]
    z = [[row.utilisation(dim) for row in cluster.nodes] for dim in cluster.dims]
    return {
        "data": [{"type": "heatmap", "x": names, "y": [dim_label(d) for d in cluster.dims], "z": z,
                  "zmin": 0, "zmax": 100, "colorscale": "Blues", "reversescale": True,
                  "xgap": 2, "ygap": 2,
                  "colorbar": {"title": {"text": "%"}},
                  "hovertemplate": "%{x} %{y}: %{z}% allocated<extra></extra>"}],
        "layout": {**_LAYOUT, "height": 120 + 40 * len(cluster.dims),
                   "margin": {"l": 70, "r": 12, "t": 12, "b": 90}, "xaxis": {"tickangle": -45}},
    }
