"""Generated scenario dicts -> ClusterSnapshot (fast path), and the churn between cycles.

`to_snapshot` builds the same snapshot `scenario.load_scenario` would for the generator's
dicts (plain-number quantities, job-level priority classes), without the per-field validation,
so building a 150,000-task cluster costs seconds, not minutes. `Churn` keeps the spec as the
cluster's state across cycles: it applies a session's decisions and finishes / submits jobs.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.bench.generator import EPOCH, World, make_job
from scheduler_core.framework.conf import DEFAULT_CONF, SchedulerConf, parse_conf
from scheduler_core.model import (
    ClusterSnapshot,
    JobInfo,
    JobPhase,
    NodeInfo,
    PriorityClassInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from scheduler_core.resources import Resource
from scheduler_core.result import SessionResult


def resource(q: dict[str, float]) -> Resource:
    """Plain-number quantities (cores, bytes, units, pods) -> Resource in stored units."""
    r = Resource(q.get("cpu", 0) * 1000, q.get("memory", 0))
    for k, v in q.items():
        if k == "pods":
            r.max_task_num = int(v)
        elif k not in ("cpu", "memory"):
            r.scalars[k] = float(v) * 1000
    return r


def conf_of(spec: dict[str, Any]) -> SchedulerConf:
    """The scenario's scheduler configuration (DEFAULT_CONF when it has none)."""
    return parse_conf(spec["config"]) if "config" in spec else DEFAULT_CONF


def to_snapshot(spec: dict[str, Any]) -> ClusterSnapshot:
    """A fresh ClusterSnapshot of a generated scenario dict (sessions change it in place)."""
    pcs = {name: PriorityClassInfo(name, value) for name, value in spec.get("priority_classes", {}).items()}
    nodes = [NodeInfo(name=n["name"], allocatable=resource(n["allocatable"]), labels=dict(n["labels"]),
                      taints=[dict(t) for t in n.get("taints", ())],
                      unschedulable=n.get("unschedulable", False)) for n in spec["nodes"]]
    queues = []
    for q in spec["queues"]:
        cap = q.get("capability")
        queues.append(QueueInfo(name=q["name"], parent=q.get("parent"), weight=q.get("weight", 1),
                                capability=resource(cap) if cap else None))
    jobs = []
    for j in spec["jobs"]:
        pc = pcs[j["priority_class"]]
        uid = f"{j['namespace']}/{j['name']}"
        job = JobInfo(uid=uid, name=j["name"], namespace=j["namespace"], queue=j["queue"],
                      min_available=j["min_member"], min_resources=resource(j["min_resources"]),
                      priority=pc.value, priority_class=pc.name,
                      phase=JobPhase(j.get("phase", "Pending")), created=j["created"])
        req_cache: dict[int, Resource] = {}
        for t in j["tasks"]:
            req = req_cache.get(id(t["request"]))
            if req is None:
                req = req_cache[id(t["request"])] = resource(t["request"])
            job.add_task(TaskInfo(
                uid=f"{j['namespace']}/{t['name']}", name=t["name"], namespace=j["namespace"],
                job_uid=uid, resreq=req.clone(), status=TaskStatus(t.get("status", "Pending")),
                node_name=t.get("node"), role=t.get("role", ""), priority=pc.value,
                preemption_policy=pc.preemption_policy, node_selector=dict(t.get("node_selector", {})),
                tolerations=[dict(x) for x in t.get("tolerations", ())], labels=dict(t.get("labels", {})),
                affinity=t.get("affinity"), created=j["created"]))
        jobs.append(job)
    return ClusterSnapshot.build(nodes=nodes, queues=queues, jobs=jobs, priority_classes=pcs.values(),
                                 now=spec.get("now", 0.0))


class Churn:
    """The cluster's state across cycles: apply decisions, finish ~rate of running tasks, submit."""

    def __init__(self, world: World, rate: float = 0.01) -> None:
        self.world, self.spec, self.rate = world, world.spec, rate
        self.tasks: dict[str, tuple[dict, dict]] = {}
        self.jobs: dict[str, dict] = {}
        for j in self.spec["jobs"]:
            self.jobs[f"{j['namespace']}/{j['name']}"] = j
            for t in j["tasks"]:
                self.tasks[f"{j['namespace']}/{t['name']}"] = (j, t)

    def running_count(self) -> int:
        """Tasks holding a node."""
        return sum(1 for _, t in self.tasks.values() if t.get("node"))

    def pending_count(self) -> int:
        """Tasks without a node."""
        return len(self.tasks) - self.running_count()

    def apply(self, result: SessionResult) -> None:
        """Binds start running; evicted tasks go back to Pending (their controller recreates them)."""
        for uid, node in result.binds.items():
            _, t = self.tasks[uid]
            t["status"], t["node"] = "Running", node
        for uid in result.evictions:
            _, t = self.tasks[uid]
            t.pop("status", None)
            t.pop("node", None)
        for uid, phase in result.job_phase.items():
            job = self.jobs.get(uid)
            if job is not None:
                job["phase"] = phase

    def step(self) -> tuple[int, int]:
        """Finish whole running jobs (~rate of running tasks), submit as many new tasks.

        Returns (finished tasks, submitted tasks). New jobs arrive Pending; the scheduler
        places them (the generator's own node bookkeeping is not used after generation).
        """
        w, rng = self.world, self.world.rng
        running = [j for j in self.spec["jobs"] if j.get("phase") == "Running"]
        target = max(1, int(self.running_count() * self.rate))
        finished = 0
        done: set[int] = set()
        for k in rng.permutation(len(running)):
            if finished >= target:
                break
            job = running[int(k)]
            done.add(id(job))
            finished += len(job["tasks"])
        if done:
            keep = []
            for j in self.spec["jobs"]:
                if id(j) in done:
                    del self.jobs[f"{j['namespace']}/{j['name']}"]
                    for t in j["tasks"]:
                        del self.tasks[f"{j['namespace']}/{t['name']}"]
                else:
                    keep.append(j)
            self.spec["jobs"] = keep
        submitted = 0
        while submitted < finished:
            queue = w.leaves[int(rng.integers(len(w.leaves)))]
            job = make_job(w, queue, running=False)
            self.spec["jobs"].append(job)
            self.jobs[f"{job['namespace']}/{job['name']}"] = job
            for t in job["tasks"]:
                self.tasks[f"{job['namespace']}/{t['name']}"] = (job, t)
            submitted += len(job["tasks"])
        self.spec["now"] = EPOCH + w.seq + 3600
        return finished, submitted
