"""conformance: kube-system and critical pods are never victims."""

from __future__ import annotations

from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import conf, job, node, snapshot, task


def test_system_and_critical_pods_are_never_victims():
    sys_job = job(
        "dns", tasks=[task("dns0", status="Running", node="n1")], namespace="kube-system", phase="Running"
    )
    crit = job(
        "crit",
        tasks=[task("c0", status="Running", node="n1")],
        priority_class="system-node-critical",
        phase="Running",
    )
    high = job("hp", tasks=[task("h0", status="Running", node="n1", priority=2_000_000_000)], phase="Running")
    plain = job("web", tasks=[task("w0", status="Running", node="n1")], phase="Running")
    pre = job("p", tasks=[task("p0")])
    ssn = open_session(
        snapshot(nodes=[node("n1", cpu="100", memory="100Gi")], jobs=[sys_job, crit, high, plain, pre]),
        conf("allocate", [["conformance"]]),
    )
    cands = [t for j in (sys_job, crit, high, plain) for t in j.tasks.values()]
    preemptor = pre.tasks["ns/p0"]
    assert [t.uid for t in ssn.preemptable(preemptor, cands)] == ["ns/w0"]
    assert [t.uid for t in ssn.reclaimable(preemptor, cands)] == ["ns/w0"]
