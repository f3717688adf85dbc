"""allocate reuses a failed twin class's fit errors only while nothing was placed since."""

from __future__ import annotations

from scheduler_core.actions.allocate.placement import ClassState
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

CONF = conf("allocate", [["priority", "gang"], ["drf", "predicates", "proportion", "nodeorder"]])


def _job(name: str, created: float, cpu: str, memory: str):
    # Distinct labels: distinct classes (sched_key) that are twins (same key without labels).
    return job(name, tasks=[task(f"{name}-0", cpu=cpu, memory=memory, labels={"job": name})], created=created)


def test_twin_errors_follow_the_cluster_state(monkeypatch):
    built: list[str] = []
    asked: list[str] = []
    init, errors = ClassState.__init__, ClassState.errors

    def counting_init(self, ssn, task, *args, **kwargs):
        built.append(task.name)
        init(self, ssn, task, *args, **kwargs)

    def counting_errors(self):
        asked.append(self.task.name)
        return errors(self)

    monkeypatch.setattr(ClassState, "__init__", counting_init)
    monkeypatch.setattr(ClassState, "errors", counting_errors)
    # n1 fits B only; A, C and D (same shape) fit nowhere. B's placement between A and C turns
    # n1's failure for that shape from memory into cpu; D, asked right after C, answers as C.
    nodes = [node("n1", cpu="4", memory="8Gi"), node("n2", cpu="1", memory="16Gi")]
    jobs = [_job("a", 1, "3", "10Gi"), _job("b", 2, "2", "1Gi"),
            _job("c", 3, "3", "10Gi"), _job("d", 4, "3", "10Gi")]
    result = run(snapshot(nodes=nodes, jobs=jobs), CONF)
    assert result.binds == {"ns/b-0": "n1"}
    failures = {uid: result.reasons[uid].details["node_failures"] for uid in ("ns/a", "ns/c", "ns/d")}
    assert failures == {
        "ns/a": {"Insufficient cpu": 1, "Insufficient memory": 1},
        "ns/c": {"Insufficient cpu": 2},
        "ns/d": {"Insufficient cpu": 2},
    }
    assert result.reasons["ns/d"].message == result.reasons["ns/c"].message
    # A, C and D are twins (they differ only in pod labels): one class state, built for A;
    # its errors are asked for A and again for C (B moved the cluster), not for D.
    assert built == ["a-0", "b-0"]
    assert asked == ["a-0", "a-0"]
