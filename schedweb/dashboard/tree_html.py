"""The queue tree's rows as HTML, built in Python: a template loop over 1,000 queues x 3 bars
takes most of a second, string building a few tens of milliseconds. Every value is escaped."""

from __future__ import annotations

from urllib.parse import quote

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from schedweb.dashboard.selectors import Bar, QueueView
from schedweb.dashboard.units import fmt_ratio


def bar_html(bar: Bar) -> str:
    """One resource bar (allocated, pending, deserved and guarantee marks), escaped HTML.

    Positions are data attributes (static/dashboard/bars.js makes them CSS variables): the
    Content-Security-Policy blocks style="..." attributes."""
    marks = ""
    if bar.deserved_pct is not None:
        marks += f'<i class="mark deserved" data-x="{bar.deserved_pct}"></i>'
    if bar.guarantee_pct is not None:
        marks += f'<i class="mark guarantee" data-x="{bar.guarantee_pct}"></i>'
    css = "bar borrowing" if bar.borrowing else "bar"
    return (f'<div class="{css}" title="{escape(bar.title)}">'
            f'<span class="alloc" data-w="{bar.allocated_pct}"></span>'
            f'<span class="pend" data-w="{bar.pending_pct}"></span>{marks}</div>')


def _cell(bar: Bar) -> str:
    ratio = escape(fmt_ratio(bar.dim, bar.allocated, bar.deserved))
    return f'<span class="cell">{bar_html(bar)}<small>{ratio}</small></span>'


def _summary(view: QueueView, url: str) -> str:
    queue = view.queue
    tags = ""
    if view.borrowing:
        tags += ' <span class="tag borrow">borrowing</span>'
    if view.waits is not None:
        title = f"{view.waits.jobs} waiting job(s) name this queue's share as their reason"
        tags += f' <span class="tag starve" title="{escape(title)}">starving</span>'
    if view.pending_jobs:
        tags += f' <span class="muted small">{view.pending_jobs} pending</span>'
    state = escape(queue.state)
    return (f'<summary data-depth="{view.depth}"><span class="qname">'
            f'<a href="{url}">{escape(queue.name)}</a>{tags}</span>'
            f'<span class="qmeta">w {queue.weight} · p {queue.priority} · '
            f'<span class="state {state.lower()}">{state}</span></span>'
            + "".join(_cell(b) for b in view.bars) + "</summary>")


def tree_rows_html(rows: list[QueueView]) -> SafeString:
    """Nested <details> for the pre-ordered rows: each closes after its subtree."""
    placeholder = "__queue__"
    url_pattern = reverse("dashboard:queue", args=[placeholder])
    parts: list[str] = []
    for i, view in enumerate(rows):
        name = view.name
        css = "q leaf" if view.is_leaf else "q"
        opened = " open" if view.depth == 0 else ""
        url = escape(url_pattern.replace(placeholder, quote(name, safe="")))
        parts.append(f'<details class="{css}" data-name="{escape(name.lower())}" '
                     f'id="q-{escape(name)}"{opened}>' + _summary(view, url) + "\n")
        next_depth = rows[i + 1].depth if i + 1 < len(rows) else 0
        parts.append("</details>" * (view.depth - next_depth + 1) + "\n")
    return mark_safe("".join(parts))  # every interpolated value is escaped above
