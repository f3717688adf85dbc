"""/metrics served from a body rendered once per cycle: a scrape costs one query (or none), whatever the load.

After each cycle's transaction ends (committed, skipped or failed: `cycle_finished`), the
cycle's process renders the whole exposition and stores it where every web process and the
scheduler see it: the one MetricsBody row of the database (PostgreSQL: no cache backend
needed; written with lz4 compression where the server has it, a few times cheaper than the
default for a body of megabytes), or with SQLite a file beside the database (metrics_body_file:
the scrape then opens no database connection). A scrape reads that and appends the one figure
that moves between cycles by itself, the last cycle's age, computed at the scrape. So the
counters and histograms are exactly the totals at the end of the newest cycle, and the gauges
are as the tables are at the render.

The render costs what changed since the previous one, not the cluster's size: the job counts
are this process's kept ones brought up to date from the change log (metrics_counts), the
queue families' lines are rewritten where a queue's figure or count moved (metrics_queues), the
per-job series follow the snapshot's changed jobs (metrics_jobs). The bytes are those of a live
render over the tables at that moment (SchedulerCollector's seven queries), which a stale body's
scrape still does.

- Newer only: a render is stored only over one of an older cycle (or an older render of the
  same cycle), so two processes finishing cycles at once never put an older body back
  (Prometheus would read a counter reset).
- Outside a cycle: a total written between cycles (a failed simulated agent step) renders the
  body again in its writer's transaction (cycle_metrics.record_agent_failure).
- Stale body: when the row is older than STALE_PERIODS periods (the scheduler stopped), or
  missing, or METRICS_PRERENDER is off, the scrape renders live, as before, and stores nothing
  (a web process never writes on a scrape: no lock to wait for).
- One body per scheduler instance (shard_runtime): each renders its own, from its own newest
  cycle (its queue samples, its per-job series), kept apart (`body_key`: row 1 for the unsharded
  instance, a row per shard; with SQLite a file per shard). `/metrics` serves the unsharded
  instance's, `/metrics?shard=NAME` that shard's: a shard's cycle never replaces another's body.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from schedweb.scheduling import metrics_body_file
from schedweb.scheduling.metrics import LAST_CYCLE_AGE, LAST_CYCLE_AGE_HELP, collect_text
from schedweb.scheduling.metrics_text import exposition
from schedweb.scheduling.models import CycleRun, MetricsBody

logger = logging.getLogger(__name__)

ROW = 1
STALE_PERIODS = 3
STALE_MIN_SECONDS = 10.0


def enabled() -> bool:
    """Whether cycles prerender the body (setting METRICS_PRERENDER, default on)."""
    return bool(getattr(settings, "METRICS_PRERENDER", True))


def stale_after() -> float:
    """Seconds after which a stored body is not served (the scrape renders live instead)."""
    return max(STALE_MIN_SECONDS, STALE_PERIODS * float(settings.SCHEDULE_PERIOD))


def body_key(shard: str) -> int:
    """The MetricsBody row of an instance's body: ROW for the unsharded one, else a key above
    it derived from the shard's name (31 bits of a hash: any primary key type holds it)."""
    if not shard:
        return ROW
    digest = hashlib.sha256(f"schedweb-metrics-body:{shard}".encode()).digest()
    return ROW + 1 + int.from_bytes(digest[:4], "big") % (2**31 - ROW - 2)


def render(shard: str = "", kept: bool = False) -> tuple[str, datetime | None]:
    """(the exposition without the last cycle's age, the newest successful cycle's start) of
    the instance `shard` ("" = unsharded); `kept`: from this process's kept counts (the render
    after a cycle), else counted afresh (a scrape's live render)."""
    return collect_text(shard, kept)


def refresh(shard: str = "") -> bool:
    """Render the body of instance `shard` now and store it unless a newer render is there
    already; True when stored. Runs in autocommit: reads, then one short transaction with the
    UPDATE (or the first INSERT), no lock held while rendering."""
    newest = (CycleRun.objects.filter(shard=shard).order_by("-id").values_list("id", flat=True).first()
              or 0)
    rendered = timezone.now()
    body, last_success = render(shard, kept=True)
    if (where := metrics_body_file.path(shard)) is not None:
        return metrics_body_file.store(where, newest, rendered, last_success, body)
    fields = {"cycle_id": newest, "rendered": rendered, "last_success": last_success, "body": body}
    older = Q(cycle_id__lt=newest) | Q(cycle_id=newest, rendered__lt=rendered)
    key = body_key(shard)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            if _update_bound(key, fields):
                return True
        elif MetricsBody.objects.filter(older, pk=key).update(**fields):
            return True
        _, created = MetricsBody.objects.get_or_create(pk=key, defaults=fields)
    return created


_lz4: list[bool] = []  # whether the server compresses with lz4 (asked once per process)
_UPDATE_SQL = (f"UPDATE {MetricsBody._meta.db_table} SET cycle_id = %s, rendered = %s, last_success = %s, "
               "body = %s WHERE id = %s AND (cycle_id < %s OR (cycle_id = %s AND rendered < %s))")


def _update_bound(key: int, fields: dict) -> bool:
    """refresh's newer-only UPDATE on PostgreSQL (in the caller's transaction), with the body
    bound on the server: Django's cursors quote parameters into the statement's text, several
    milliseconds of CPU for megabytes, and as many for the server to parse. Compressed with lz4
    where the server has it (PostgreSQL 14+ built with it; reading needs nothing): the default,
    pglz, costs several times more. True when a row was replaced."""
    connection.ensure_connection()
    # Logging queries (DEBUG, tests that capture them): Django's own cursor, whose log shows the
    # statements' text (a server-bound one's would be empty).
    if connection.queries_logged:
        cursor = connection.cursor()
    else:  # wrapped as Django wraps its own (error mapping, execute wrappers)
        cursor = connection.make_cursor(psycopg.Cursor(connection.connection))
    # A transaction of its own when the caller has none: SET LOCAL holds only inside one.
    with transaction.atomic(), cursor:
        if not _lz4:
            cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                           "WHERE name = 'default_toast_compression'")
            _lz4.append(bool((cursor.fetchone() or (False,))[0]))
        if _lz4[0]:
            cursor.execute("SET LOCAL default_toast_compression = 'lz4'")
        newest, rendered = fields["cycle_id"], fields["rendered"]
        cursor.execute(_UPDATE_SQL, [newest, rendered, fields["last_success"], fields["body"], key,
                                     newest, newest, rendered])
        return cursor.rowcount > 0


def age_text(last_success: datetime | None, now: datetime) -> str:
    """The last cycle's age family, as the collector writes it."""
    family = GaugeMetricFamily(LAST_CYCLE_AGE, LAST_CYCLE_AGE_HELP)
    if last_success is not None:
        family.add_metric([], (now - last_success).total_seconds())
    return exposition([family]).decode("utf-8")


def _stored(shard: str) -> tuple[datetime, datetime | None, str] | None:
    """(rendered, last success, body) of the instance's stored render: the file's when there is
    one (no database connection), else the row's (one query)."""
    if (where := metrics_body_file.path(shard)) is not None:
        found = metrics_body_file.load(where)
        return found[1:] if found is not None else None
    return (MetricsBody.objects.filter(pk=body_key(shard)).values_list("rendered", "last_success", "body")
            .first())


def scrape(shard: str = "") -> bytes:
    """The body of GET /metrics (`shard` "": the unsharded instance's; else `?shard=NAME`'s): the
    stored render when it is fresh (one query), else (or with METRICS_PRERENDER off in this
    process) a live one."""
    now = timezone.now()
    row = _stored(shard) if enabled() else None
    if row is not None and (now - row[0]).total_seconds() <= stale_after():
        body, last_success = row[2], row[1]
    else:
        body, last_success = render(shard)
    return (body + age_text(last_success, now)).encode("utf-8")


def after_cycle(*, run: CycleRun | None = None, shard: str | None = None, **_: object) -> None:
    """cycle_finished receiver (and after a total moved outside a cycle): prerender the body of
    the cycle's instance (`shard`, else the run's, else the unsharded one) for the scrapes until
    its next cycle. Inside a caller's transaction: the row in a savepoint of its own, the file
    once the transaction has committed (a file cannot roll back with it)."""
    if not enabled():
        return
    instance = shard if shard is not None else (run.shard if run is not None else "")
    if connection.in_atomic_block and metrics_body_file.path(instance) is not None:
        transaction.on_commit(lambda: _refresh_logged(instance))
    else:
        _refresh_logged(instance)


def _refresh_logged(shard: str = "") -> None:
    try:
        if connection.in_atomic_block:
            with transaction.atomic():
                refresh(shard)
        else:
            refresh(shard)
    except Exception:  # the scrape falls back to a live render; the cycle itself is done
        logger.exception("metrics: could not prerender /metrics after the cycle")
