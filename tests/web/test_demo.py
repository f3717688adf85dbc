"""load_demo: the demo cluster has what the issue asks for, and a second run changes nothing."""

from __future__ import annotations

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import call_command

from schedweb.core.demo import load_demo
from schedweb.core.models import Job, NamespaceQuota, Node, PriorityClass, Queue, SchedulerConfig, Task

MODELS = (PriorityClass, Queue, Node, NamespaceQuota, Job, Task, SchedulerConfig)
VOLATILE = {"id", "created", "updated", "finished", "started", "usage_updated"}


def fingerprint() -> tuple[dict[str, int], str]:
    """Row counts and a hash of all demo content (ids and timestamps left out)."""
    counts, digest = {}, hashlib.sha256()
    for model in MODELS:
        rows = [{k: v for k, v in row.items() if k not in VOLATILE and not k.endswith("_id")}
                for row in model.objects.values()]
        rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
        counts[model.__name__] = len(rows)
        digest.update(json.dumps(rows, sort_keys=True, default=str).encode())
    return counts, digest.hexdigest()


@pytest.fixture
def demo(db):
    return load_demo()


def depth(queue: Queue) -> int:
    return 1 if queue.parent is None else 1 + depth(queue.parent)


def test_counts(demo):
    assert demo == {"priority_classes": 3, "queues": 11, "nodes": 21, "namespace_quotas": 1, "jobs": 36,
                    "scheduler_configs": 1}
    assert Task.objects.count() == 185


def test_queue_tree_mixes_settings(demo):
    queues = list(Queue.objects.select_related("parent__parent"))
    assert max(depth(q) for q in queues) == 3 and len(queues) >= 8
    assert {q.weight for q in queues} == {1, 2, 3, 5}
    assert Queue.objects.get(name="nlp").deserved == {"cpu": 96000.0, "memory": 768 * 2**30,
                                                      "nvidia.com/gpu": 24000.0}
    assert Queue.objects.exclude(guarantee=None).count() == 2
    assert Queue.objects.exclude(capability=None).count() == 6
    assert Queue.objects.get(name="legacy").state == "Closed"


def test_nodes(demo):
    assert Node.objects.count() >= 20
    gpu = Node.objects.filter(name__startswith="gpu-")
    assert gpu.count() == 6 and all(n.allocatable["nvidia.com/gpu"] == 8000.0 for n in gpu)
    tainted = Node.objects.filter(labels__pool="highmem")
    taint = {"key": "dedicated", "value": "highmem", "effect": "NoSchedule"}
    assert tainted.count() == 3 and all(n.taints == [taint] for n in tainted)
    assert list(Node.objects.filter(unschedulable=True).values_list("name", flat=True)) == ["cpu-12"]


def test_jobs_across_phases_with_unfittable_gangs(demo):
    phases = {p: Job.objects.filter(phase=p).count() for p in ("Running", "Pending", "Inqueue", "Completed",
                                                                 "Cancelled")}
    assert phases == {"Running": 12, "Pending": 15, "Inqueue": 2, "Completed": 5, "Cancelled": 2}
    giant = Job.objects.get(name="gpt-giant")
    gpus_needed = sum(t.request["nvidia.com/gpu"] for t in giant.tasks.all())
    gpus_total = sum(n.allocatable.get("nvidia.com/gpu", 0) for n in Node.objects.all())
    assert giant.min_member == 20 and gpus_needed > gpus_total
    biggest_cpu = max(n.allocatable["cpu"] for n in Node.objects.all())
    assert all(t.request["cpu"] > biggest_cpu for t in Job.objects.get(name="megabatch").tasks.all())


def test_running_tasks_fit_their_nodes(demo):
    for node in Node.objects.all():
        used: dict[str, float] = {}
        tasks = node.tasks.filter(status="Running")
        for request in tasks.values_list("request", flat=True):
            for key, value in request.items():
                used[key] = used.get(key, 0) + value
        assert all(used[k] <= node.allocatable.get(k, 0) for k in used), node.name
        assert not (node.unschedulable and tasks.exists())
    assert Task.objects.filter(status="Running", node=None).count() == 0


def test_one_active_default_config(demo):
    config = SchedulerConfig.objects.get()
    assert config.active and config.version == 1 and "proportion" in config.yaml


def test_second_run_changes_nothing(demo):
    before = fingerprint()
    assert load_demo() == dict.fromkeys(demo, 0)
    assert fingerprint() == before


def test_command_if_empty(db):
    out = StringIO()
    call_command("load_demo", "--if-empty", stdout=out)
    assert out.getvalue().startswith("Demo loaded: created 3 priority classes, 11 queues, 21 nodes")
    out = StringIO()
    call_command("load_demo", "--if-empty", stdout=out)
    assert out.getvalue() == "Database not empty: demo not loaded.\n"
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert out.getvalue() == "Demo already loaded: nothing to do.\n"
