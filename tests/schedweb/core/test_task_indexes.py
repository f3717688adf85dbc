"""core_task's indexes: each changed task row writes one entry per index, so none is redundant."""

from __future__ import annotations

from django.db import connection

from schedweb.core.models import Task


def test_lookups_by_job_use_the_unique_job_name_index(db):
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Task._meta.db_table)
    indexed = sorted(tuple(c["columns"]) for c in constraints.values()
                     if (c["index"] or c["unique"]) and not c["primary_key"])
    assert ("job_id", "name") in indexed  # leads with job_id: serves every lookup by job
    assert ("job_id",) not in indexed
    # No index on `updated`: the API's data version reads the scheduler's change log instead.
    assert indexed == [("job_id", "name"), ("node_id",), ("status",)]


def test_the_change_log_records_every_writer(db):
    """Triggers log each changed row, whoever writes it (here plain SQL, as a COPY or psql would)."""
    if connection.vendor != "postgresql":
        return
    from schedweb.core.models import Job, Queue

    queue = Queue.objects.create(name="q")
    job = Job.objects.create(namespace="ns", name="j", queue=queue)
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM scheduling_change")
        start = cursor.fetchone()[0]
        cursor.execute("INSERT INTO core_task (job_id, name, role, request, status, node_selector, "
                       "tolerations, topology_spread_constraints, preemption_policy, preemptable, labels, "
                       "created, updated) VALUES (%s, 't', '', '{}', 'Pending', '{}', '[]', '[]', 'Never', "
                       "true, '{}', now(), now()) RETURNING id", [job.id])
        task_id = cursor.fetchone()[0]
        cursor.execute("UPDATE core_task SET status = 'Failed' WHERE id = %s", [task_id])
        cursor.execute("DELETE FROM core_task WHERE id = %s", [task_id])
        cursor.execute("SELECT tbl, row_id FROM scheduling_change WHERE id > %s ORDER BY id", [start])
        assert cursor.fetchall() == [("core_task", task_id)] * 3
