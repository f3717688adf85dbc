"""drf: dominant shares, job order by share, share-based victims, event updates."""

from __future__ import annotations

from functools import cmp_to_key

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.plugins.drf.drf import dominant_share
from tests.scheduler_core.builders import conf, job, node, res, snapshot, task


@pytest.mark.parametrize(
    "allocated,total,expected",
    [
        (res("2", "1Gi"), res("10", "10Gi"), 0.2),
        (res("1", "5Gi"), res("10", "10Gi"), 0.5),
        (res("0", "0"), res("10", "10Gi"), 0.0),
        (res("1", "1Gi", gpu=1), res("10", "10Gi"), 0.1),  # gpu absent from the total is ignored
        (res("1", "1Gi", gpu=1), res("10", "10Gi", gpu=4), 0.25),
    ],
)
def test_dominant_share(allocated, total, expected):
    assert dominant_share(allocated, total) == pytest.approx(expected)


def _session(jobs):
    # cluster: 10 cpu, 10Gi
    return open_session(
        snapshot(nodes=[node("n1", cpu="10", memory="10Gi")], jobs=jobs), conf("allocate", [["drf"]])
    )


def test_job_order_lowest_share_first_and_events_update_shares():
    big = job("big", tasks=[task("b0", cpu="4", memory="1Gi", status="Running", node="n1")], phase="Running")
    small = job(
        "small",
        tasks=[
            task("s0", cpu="1", memory="3Gi", status="Running", node="n1"),
            task("s1", cpu="1", memory="3Gi"),
        ],
    )
    none = job("none", tasks=[task("x0", cpu="1", memory="1Gi")])
    ssn = _session([big, small, none])
    drf = ssn.plugins["drf"]
    assert drf.shares == {"ns/big": 0.4, "ns/small": 0.3, "ns/none": 0.0}
    assert [j.name for j in sorted(ssn.jobs.values(), key=cmp_to_key(ssn.job_compare))] == [
        "none",
        "small",
        "big",
    ]
    ssn.allocate(small.tasks["ns/s1"], "n1")  # small now 2 cpu / 6Gi -> 0.6
    assert drf.shares["ns/small"] == pytest.approx(0.6)
    assert [j.name for j in sorted(ssn.jobs.values(), key=cmp_to_key(ssn.job_compare))] == [
        "none",
        "big",
        "small",
    ]


def test_preemptable_by_share():
    # victim job v: 6 cpu running in three 2-cpu tasks (share 0.6); preemptor job p: nothing yet.
    v = job(
        "v",
        tasks=[task(f"v{i}", cpu="2", memory="1Gi", status="Running", node="n1") for i in range(3)],
        phase="Running",
    )
    p = job("p", tasks=[task("p0", cpu="3", memory="1Gi")])
    ssn = _session([v, p])
    cands = list(v.tasks.values())
    # preemptor share after placing: 0.3. v after losing v0: 4/10 = 0.4 >= 0.3 -> victim;
    # after v1 as well: 0.2 < 0.3 -> not; v2 (cumulative): 0.0 -> not.
    assert [t.name for t in ssn.preemptable(p.tasks["ns/p0"], cands)] == ["v0"]
