"""Times as every page shows them: `when` (absolute) and `ago` (relative), both as <time> elements
that static/dashboard/times.js turns into the reader's own zone, with the zone named."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

register = template.Library()

_TIME_FORMATS = {"": "%Y-%m-%d %H:%M:%S", "time": "%H:%M:%S", "minute": "%Y-%m-%d %H:%M"}


@register.filter
def when(value: datetime | None, fmt: str = "") -> SafeString | str:
    """An absolute time as <time class="local">: UTC text, labelled so, which
    static/dashboard/times.js rewrites in the reader's zone with the zone named. `fmt`: "" (date and
    seconds), "time" (time of day) or "minute"."""
    if not isinstance(value, datetime):
        return ""
    utc = _utc(value)
    text = utc.strftime(_TIME_FORMATS.get(fmt, _TIME_FORMATS[""])) + " UTC"
    return format_html('<time class="local" datetime="{}" data-format="{}">{}</time>',
                       utc.isoformat(), fmt, text)


@register.filter
def ago(value: datetime | None) -> SafeString | str:
    """A relative time ("3 minutes ago") whose tooltip is the absolute time (UTC, then the reader's
    zone once times.js ran)."""
    if not isinstance(value, datetime):
        return ""
    utc = _utc(value)
    return format_html('<time class="local rel" datetime="{}" title="{}">{} ago</time>',
                       utc.isoformat(), utc.strftime(_TIME_FORMATS[""]) + " UTC", timesince(utc))


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
