"""The newest waiting jobs of /metrics' unscheduled-task series, picked from keys kept sorted,
and the series' text.

metrics.UNSCHEDULED_SQL orders the waiting jobs by creation, newest first, then by namespace and
name as the database orders text (its collation), and keeps the first METRICS_JOB_SERIES_MAX.
The kept counts (schedweb.scheduling.metrics_counts) hold those jobs' keys sorted the same way
but with Python's order of text: the same jobs are picked unless jobs created at the same
microsecond straddle the cut. Only then is the database asked how it orders that group.
"""

from __future__ import annotations

from django.db import connection
from prometheus_client.utils import floatToGoString

from schedweb.scheduling.metrics_text import escape_label_value

Key = tuple[int, str, str, int]  # (-created in microseconds, namespace, name, job id)

GROUP_ORDER_SQL = ("SELECT i FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(ns, n, i) "
                   "ORDER BY ns, n")


def newest(order: list[Key], limit: int) -> list[Key]:
    """The first `limit` keys of `order` (sorted) as the database would pick them."""
    if limit <= 0:
        return []
    if len(order) <= limit or order[limit - 1][0] != order[limit][0]:
        return order[:limit]
    edge = order[limit][0]
    lo = limit - 1
    while lo > 0 and order[lo - 1][0] == edge:
        lo -= 1
    hi = limit
    while hi < len(order) and order[hi][0] == edge:
        hi += 1
    group = order[lo:hi]
    return order[:lo] + [group[i] for i in _database_order(group)[:limit - lo]]


def _database_order(keys: list[Key]) -> list[int]:
    """Positions in `keys` as the database orders their (namespace, name)."""
    if connection.vendor != "postgresql":
        return sorted(range(len(keys)), key=lambda i: keys[i][1:3])
    with connection.cursor() as cursor:
        cursor.execute(GROUP_ORDER_SQL, [[k[1] for k in keys], [k[2] for k in keys]])
        return [i - 1 for (i,) in cursor.fetchall()]


# (namespace, name, tasks) -> its line, of the last render (the counts are integers: equal
# values write the same text).
_LINES: list[dict[tuple[str, str, int], str]] = [{}]


def series_text(name: str, entries: list[tuple[str, str, int]]) -> str:
    """The sample lines of the unscheduled-task family `name` (job_id = namespace/name), as
    metrics_text.exposition writes them; a line is kept while its job's count holds."""
    before, now = _LINES[0], {}
    for entry in entries:
        line = before.get(entry)
        if line is None:
            namespace, job, n = entry
            line = f'{name}{{job_id="{escape_label_value(f"{namespace}/{job}")}"}} {floatToGoString(n)}\n'
        now[entry] = line
    _LINES[0] = now
    return "".join(now[entry] for entry in entries)
