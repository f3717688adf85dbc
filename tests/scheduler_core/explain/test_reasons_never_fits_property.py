"""NeverFits soundness (property): a job the scheduler calls NeverFits cannot run even when every
other job has finished, on small generated clusters under proportion, capacity and the capacity
tree; and the empty cluster says NeverFits again."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import GPU, conf, job, node, queue, run, snapshot, task
from tests.scheduler_core.explain.test_never_fits import CAPACITY_TREE, PROPORTION, TAINT, TOLERATE

CONFS = {
    "proportion": PROPORTION,
    "capacity-tree": CAPACITY_TREE,
    "capacity": conf(
        "enqueue, allocate, backfill",
        [["priority", "gang", "conformance"], ["drf", "predicates", "capacity", "nodeorder"]],
    ),
}


@st.composite
def clusters(draw: st.DrawFn) -> dict:
    """A small cluster as plain data: nodes, queues (maybe a parent, capabilities), jobs."""
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        nodes.append(
            {
                "name": f"n{i}",
                "cpu": draw(st.sampled_from(["2", "4", "8"])),
                "memory": draw(st.sampled_from(["4Gi", "8Gi", "16Gi"])),
                "gpu": draw(st.sampled_from([None, None, 4, 8])),
                "zone": draw(st.sampled_from(["a", "b"])),
                "tainted": draw(st.booleans()),
                "unschedulable": draw(st.integers(0, 9)) == 0,
            }
        )
    queues = [
        {"name": "q0", "parent": None, "capability": draw(st.sampled_from([None, {"cpu": "6"}, {GPU: 8}]))},
        {
            "name": "q1",
            "parent": draw(st.sampled_from([None, "q0"])),
            "capability": draw(st.sampled_from([None, {"cpu": "3"}, {GPU: 4}])),
        },
    ]
    jobs = []
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 4))
        jobs.append(
            {
                "name": f"j{i}",
                "queue": draw(st.sampled_from(["q0", "q1"])),
                "n": n,
                "min": draw(st.integers(1, n)),
                "cpu": draw(st.sampled_from(["1", "2", "4", "8", "16"])),
                "memory": draw(st.sampled_from(["1Gi", "4Gi", "32Gi"])),
                "gpu": draw(st.sampled_from([None, None, 1, 4, 8])),
                "zone": draw(st.sampled_from([None, None, "a", "c"])),
                "tolerates": draw(st.booleans()),
                "phase": draw(st.sampled_from(["Inqueue", "Pending"])),
                "min_cpu": draw(st.sampled_from([None, "2", "8"])),
                "running": draw(st.integers(0, 2)),
            }
        )
    return {"nodes": nodes, "queues": queues, "jobs": jobs}


def build(spec: dict, only: str | None = None):
    """The snapshot of a generated cluster; `only`: that job alone (everything else finished).

    A job's first `running` tasks run on the first schedulable node with room (others finish)."""
    nodes = [
        node(
            n["name"],
            cpu=n["cpu"],
            memory=n["memory"],
            gpu=n["gpu"],
            labels={"zone": n["zone"]},
            taints=TAINT if n["tainted"] else [],
            unschedulable=n["unschedulable"],
        )
        for n in spec["nodes"]
    ]
    free = {nd.name: nd.allocatable.clone() for nd in nodes if not nd.unschedulable}
    queues = [queue(q["name"], parent=q["parent"], capability=q["capability"]) for q in spec["queues"]]
    jobs = []
    for j in spec["jobs"]:
        tasks = []
        for k in range(j["n"]):
            t = task(
                f"{j['name']}-{k}",
                cpu=j["cpu"],
                memory=j["memory"],
                gpu=j["gpu"],
                node_selector={"zone": j["zone"]} if j["zone"] else {},
                tolerations=TOLERATE if j["tolerates"] else [],
            )
            if k < j["running"] and j["phase"] == "Inqueue":
                # Only where the job could run: selector, taints, room.
                spot = next(
                    (
                        nd
                        for nd in nodes
                        if nd.name in free
                        and t.resreq.less_equal(free[nd.name], 0)
                        and (not j["zone"] or nd.labels["zone"] == j["zone"])
                        and (j["tolerates"] or not nd.taints)
                    ),
                    None,
                )
                if spot is not None:
                    free[spot.name].sub(t.resreq)
                    t.status, t.node_name = TaskStatus.RUNNING, spot.name
            tasks.append(t)
        min_res = {"cpu": j["min_cpu"]} if j["min_cpu"] and j["phase"] == "Pending" else None
        jobs.append(
            job(
                j["name"],
                queue=j["queue"],
                tasks=tasks,
                min_available=j["min"],
                phase=j["phase"],
                min_resources=min_res,
            )
        )
    # The job alone keeps exactly its state in the full cluster (placements computed above).
    return snapshot(nodes=nodes, queues=queues, jobs=[j for j in jobs if only is None or j.uid == only])


@settings(max_examples=150, deadline=None)
@given(spec=clusters(), which=st.sampled_from(sorted(CONFS)))
def test_a_never_fits_job_cannot_run_alone(spec, which):
    cfg = CONFS[which]
    result = run(build(spec), cfg)
    never = [uid for uid, r in result.reasons.items() if str(r.code) == "NeverFits"]
    for kind in sorted({result.reasons[uid].details["kind"] for uid in never}):
        event(kind)
    for uid in never:
        reason = result.reasons[uid]
        alone = run(build(spec, only=uid), cfg)
        job_tasks = {t for t in alone.binds if t.startswith(f"{uid}-")} | set(alone.pipelined)
        assert not job_tasks, (uid, reason.message, alone.binds)
        # And it says so again in the empty cluster.
        assert str(alone.reasons[uid].code) == "NeverFits", (uid, alone.reasons[uid].message)
