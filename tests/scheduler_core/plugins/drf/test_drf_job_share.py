"""drf reports every job's dominant share at session close (`volcano_job_share`)."""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, run, snapshot, task


def test_each_jobs_share_after_the_session_goes_to_the_result():
    # Cluster: 10 cpu, 10Gi, 110 pods. `run` holds 4 cpu / 1Gi: share 0.4 (cpu). `new` gets its
    # 1 cpu / 3Gi task bound in this session: share 0.3 (memory), as drf knows it at close.
    # `waits` asks for more than the cluster has: nothing allocated, share 0.
    jobs = [job("run", created=1.0, phase="Running",
                tasks=[task("r0", cpu="4", memory="1Gi", status="Running", node="n1")]),
            job("new", created=2.0, tasks=[task("n0", cpu="1", memory="3Gi")]),
            job("waits", created=3.0, tasks=[task("w0", cpu="20", memory="1Gi")])]
    result = run(snapshot(nodes=[node("n1", cpu="10", memory="10Gi")], jobs=jobs),
                 conf("enqueue, allocate", [["gang"], ["drf", "predicates", "proportion"]]))
    assert result.binds == {"ns/n0": "n1"}
    shares = result.job_gauges["job_share"]
    assert shares == {"ns/run": pytest.approx(0.4), "ns/new": pytest.approx(0.3), "ns/waits": 0.0}


def test_without_drf_there_is_no_share():
    jobs = [job("new", tasks=[task("n0")])]
    result = run(snapshot(nodes=[node("n1")], jobs=jobs), conf("enqueue, allocate", [["gang", "proportion"]]))
    assert "job_share" not in result.job_gauges
