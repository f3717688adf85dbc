"""Template filters for resource amounts, durations and reason labels."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from schedweb.dashboard import units
from schedweb.dashboard.job_reason import row_sentence
from schedweb.dashboard.reason_text import reason_label as _reason_label

register = template.Library()


@register.filter
def amount(value: float | None, dim: str) -> str:
    """`{{ stored|amount:"memory" }}` -> `64 GiB`."""
    return units.fmt(dim, value)


@register.filter
def ratio(bar: Any) -> str:
    """`{{ bar|ratio }}`: a bar's allocated / deserved, `159 / 192 cores`."""
    return units.fmt_ratio(bar.dim, bar.allocated, bar.deserved)


@register.filter
def resmap(value: dict[str, Any] | None) -> str:
    """A stored resource map in words: `cpu 12, memory 64 GiB`."""
    return units.fmt_map(value)


@register.filter
def dimlabel(dim: str) -> str:
    """CPU / Memory / GPU."""
    return units.dim_label(dim)


@register.filter
def get(mapping: dict | None, key: str) -> Any:
    """`{{ d|get:key }}` for keys with dots or slashes (nvidia.com/gpu)."""
    return (mapping or {}).get(key)


@register.filter
def seconds(value: float | None) -> str:
    """`0.42 s`, `35 s`, `4 min`, `2.5 h`; an em dash for None."""
    if value is None:
        return "\u2014"
    value = float(value)
    if value < 10:
        return f"{value:.2f} s"
    if value < 120:
        return f"{value:.0f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


@register.filter
def pct(value: float | None) -> str:
    """`42.5%`; an em dash for None."""
    return "\u2014" if value is None else f"{value:g}%"


@register.filter
def reason_label(code: str) -> str:
    """A short label for a reason code."""
    return _reason_label(code)


@register.filter
def reason_line(job: Any) -> str:
    """`{{ job|reason_line }}`: the job's reason in one line, figures in human units."""
    return row_sentence(job.reason_code, job.reason_message, job.reason_details)


@register.filter
def kind_label(kind: str | None) -> str:
    """`{{ details.kind|kind_label }}`: a NeverFits kind in words."""
    from schedweb.dashboard.job_reason import kind_label as label

    return label(kind)


@register.filter
def util(row: Any, dim: str) -> float | None:
    """`{{ node_row|util:"cpu" }}`: allocated percent of a node on one resource."""
    return row.utilisation(dim)


@register.filter
def bar(value: Any) -> SafeString:
    """`{{ bar|bar }}`: a queue's resource bar (rendered in Python: it repeats per queue)."""
    from schedweb.dashboard.tree_html import bar_html

    return mark_safe(bar_html(value))  # bar_html escapes every value

