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
    assert indexed == [("job_id", "name"), ("node_id",), ("status",), ("updated",)]
