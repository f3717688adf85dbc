"""The rolling re-read: each incremental cycle also re-reads one slice of the rows the kept
snapshot holds, as if they had changed, so every node, job and task row is compared with the
database within SCHEDULER_REREAD_EVERY cycles, a little every cycle.

It bounds how long anything the change log could have missed (a write with its triggers off, a
bug in applying a change) lives in the kept snapshot. A full load every N cycles gave the same
bound as a spike: at the L benchmark a cold cycle (load, plugins built afresh, every reason
rendered, the collector's full walk of the thawed heap) costs about four steady cycles, and one
cycle in a hundred is a p99. A slice costs about what a hundredth of the cluster changing costs.

Slice k of `every` (k = the cycle's count since the full load, modulo `every`) of a table is the id
range [k * w, (k + 1) * w) with w = max(id) // every + 1, the last slice open above. Its rows are
those of the range in the database that the load would read (its scope: live jobs and their tasks,
tasks holding a node, every node) plus those of the range the snapshot holds. Each is read and
compared with the hash of the row as last applied (`LoadedState.row_hashes`); only a row that
differs, is new to the snapshot, or is gone from the database is handed to the Applier as changed
(re-applied through the model's methods, or dropped). An unchanged slice costs its reads, not a
re-application: re-applying would renew every task object and with it the kept answers of its
job. A row that differs although the log never named it is logged (an out-of-band write, or a
bug in applying changes; the log names a row committed during the cycle's reads only at the
next cycle, so that case is logged too).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping

from django.conf import settings
from django.db import connection

from schedweb.scheduling.snapshot_sql import JOBS, TASKS, fetch_by

logger = logging.getLogger(__name__)

TABLES = ("core_node", "core_job", "core_task")
STATEMENTS = {"core_node": "nodes", "core_job": "jobs", "core_task": "tasks"}  # snapshot_sql's
_OPEN = 2**62  # the last slice's upper bound: above any id
_TOPS_SQL = ("SELECT (SELECT max(id) FROM core_node), (SELECT max(id) FROM core_job), "
             "(SELECT max(id) FROM core_task)")
# The ids of each range that the load reads (the statements' own scopes).
_IDS_SQL = (
    "SELECT 0, id FROM core_node WHERE id >= %s AND id < %s "
    f"UNION ALL SELECT 1, id FROM core_job WHERE id >= %s AND id < %s AND ({JOBS.where}) "
    f"UNION ALL SELECT 2, t.id FROM {TASKS.restricted[0]} WHERE t.id >= %s AND t.id < %s "
    f"AND ({TASKS.restricted[1]})")


def every() -> int:
    """settings.SCHEDULER_REREAD_EVERY (default 100; 0 = no re-read)."""
    return int(getattr(settings, "SCHEDULER_REREAD_EVERY", 100))


def slice_bounds(top: int | None, k: int, n: int) -> tuple[int, int]:
    """[lo, hi) of slice k of n over ids 0..top (the last slice open above)."""
    width = (top or 0) // n + 1
    return k * width, (k + 1) * width if k < n - 1 else _OPEN


def slice_ids(cycle: int, known: Mapping[str, Iterable[int]]) -> dict[str, set[int]]:
    """{table: ids} to re-read this cycle (`cycle`: cycles since the full load; `known`: the ids
    the snapshot holds per table). Two statements; nothing when the re-read is off."""
    n = every()
    if n <= 0:
        return {}
    k = cycle % n
    with connection.cursor() as cursor:
        cursor.execute(_TOPS_SQL)
        bounds = [slice_bounds(top, k, n) for top in cursor.fetchone()]
        cursor.execute(_IDS_SQL, [v for b in bounds for v in b])
        rows = cursor.fetchall()
    out: dict[str, set[int]] = {table: set() for table in TABLES}
    for index, pk in rows:
        out[TABLES[index]].add(pk)
    for table, (lo, hi) in zip(TABLES, bounds, strict=True):
        out[table].update(pk for pk in known.get(table, ()) if lo <= pk < hi)
    return out


def stale_ids(cycle: int, known: Mapping[str, Collection[int]], hashes: Mapping[str, Mapping[int, int]],
              changed: Mapping[str, Collection[int]]) -> dict[str, set[int]]:
    """{table: ids} of this cycle's slice whose rows differ from what the snapshot last applied
    (`hashes`), are new to it or are gone (`known`: the snapshot's ids); rows the change log
    named this cycle (`changed`) are left to it. Logs the rows that moved without a log entry."""
    out: dict[str, set[int]] = {}
    missed = 0
    for table, ids in slice_ids(cycle, known).items():
        ids = ids - set(changed.get(table, ()))
        if not ids:
            continue
        rows = fetch_by(STATEMENTS[table], "id", sorted(ids))
        seen, held = hashes.get(table, {}), known.get(table, ())
        stale = {r.id for r in rows if seen.get(r.id) != hash(r)}
        gone = {pk for pk in ids - {r.id for r in rows} if pk in held}
        missed += sum(1 for pk in stale if pk in seen) + len(gone)
        if stale or gone:
            out[table] = stale | gone
    if missed:
        # A write outside the log (triggers off), a bug in applying changes, or (rarely) a row
        # committed between this cycle's head read and this read: the log names it next cycle.
        logger.warning("scheduler snapshot: %d row(s) not named by the change log differed from the "
                       "database; re-read", missed)
    return out
