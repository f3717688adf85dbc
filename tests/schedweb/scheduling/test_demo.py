"""load_demo: the demo cluster has what the issue asks for, and a second run changes nothing; the
default configuration (hierarchical capacity) and the switch to Volcano's flat default."""

from __future__ import annotations

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from scheduler_core.framework.conf import DEFAULT_CONF, DEFAULT_CONF_YAML, parse_conf
from schedweb.core.models import Job, NamespaceQuota, Node, PriorityClass, Queue, SchedulerConfig, Task
from schedweb.scheduling.default_conf import SCHEDWEB_DEFAULT_CONF_YAML, schedweb_default_conf
from schedweb.scheduling.demo import load_demo, task_duration

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
    assert Queue.objects.get(name="nlp").deserved == {"cpu": 128000.0, "memory": 1024 * 2**30,
                                                      "nvidia.com/gpu": 24000.0}
    assert Queue.objects.exclude(guarantee=None).count() == 2
    # Parents bound their subtree (hierarchical capacity): sandbox no longer repeats dev's limit.
    assert sorted(Queue.objects.exclude(capability=None).values_list("name", flat=True)) == [
        "dev", "etl", "nlp-eval", "research", "vision"]
    assert Queue.objects.get(name="legacy").state == "Closed"


GIB = 2**30


def test_deserved_at_every_level_within_parents(demo):
    """Hierarchical capacity needs deserved everywhere: children's deserved sum within their
    parent's, deserved within the capability, guarantee within the deserved (per dimension)."""
    queues = {q.name: q for q in Queue.objects.all()}
    assert all(q.deserved for q in queues.values())
    for queue in queues.values():
        kids = [k for k in queues.values() if k.parent_id == queue.pk]
        for dim, value in queue.deserved.items():
            assert sum(k.deserved.get(dim, 0) for k in kids) <= value, (queue.name, dim)
        for limit, within in ((queue.deserved, queue.capability), (queue.guarantee, queue.deserved)):
            for dim, value in (limit or {}).items():
                assert value <= (within or {}).get(dim, value), (queue.name, dim)
    assert queues["research"].deserved == {"cpu": 192000.0, "memory": 1536 * GIB, "nvidia.com/gpu": 40000.0}
    assert queues["sandbox"].capability is None


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


def test_one_active_default_config_is_hierarchical_capacity(demo):
    config = SchedulerConfig.objects.get()
    assert (config.active, config.version, config.yaml) == (True, 1, SCHEDWEB_DEFAULT_CONF_YAML)
    assert parse_conf(config.yaml).plugin("capacity").enabled("enableHierarchy")
    assert parse_conf(config.yaml).plugin("proportion") is None


def test_default_conf_is_volcanos_tiers_with_capacity_for_proportion():
    """Volcano's default (flat proportion) is unchanged; schedweb's swaps only that plugin."""
    volcano, ours = DEFAULT_CONF.to_dict(), schedweb_default_conf().to_dict()
    swapped = [p if p["name"] != "proportion" else {"name": "capacity", "enableHierarchy": True}
               for p in volcano["tiers"][1]["plugins"]]
    assert ours == {**volcano, "tiers": [volcano["tiers"][0], {"plugins": swapped}]}
    assert [p.name for p in DEFAULT_CONF.tiers[1].plugins] == [
        "overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]


def test_durations_vary_per_task(demo):
    """Every job that can run has minutes-long tasks, a little longer per index."""
    assert task_duration(40, 0) == 40.0 and task_duration(40, 3) == 52.0 and task_duration(40, 4) == 40.0
    durations = dict(Task.objects.filter(job__name="eval-sweep-1").values_list("name", "duration"))
    assert durations == {"eval-sweep-1-0": 40.0, "eval-sweep-1-1": 44.0, "eval-sweep-1-2": 48.0}
    running = Task.objects.filter(status="Running")
    assert running.filter(duration=None).count() == 0
    assert set(running.filter(duration__lte=60).values_list("job__name", flat=True)) == {
        "augment-preproc", "eval-sweep-1", "etl-orders"}
    never = {"gpt-giant", "megabatch", "in-memory-join", "sandbox-overcap"}
    waiting = Task.objects.filter(job__phase__in=("Pending", "Inqueue")).exclude(job__name__in=never)
    assert waiting.filter(duration=None).count() == 0


OURS = SCHEDWEB_DEFAULT_CONF_YAML


@pytest.mark.parametrize(("args", "out", "yaml"), [
    (["--activate", "volcano-default"], "activated volcano-default as version 2\n", DEFAULT_CONF_YAML),
    (["--activate", "schedweb-default"], "activated schedweb-default as version 2\n", OURS),
    ([], "active: version 1 (schedweb-default) schedweb's default: Volcano's tiers with hierarchical "
         "capacity\n", OURS),
])
def test_scheduler_conf_switch(demo, args, out, yaml):
    """Volcano's flat proportion default is one command away (and back)."""
    stdout = StringIO()
    call_command("scheduler_conf", *args, stdout=stdout)
    assert stdout.getvalue() == out
    assert SchedulerConfig.objects.get(active=True).yaml == yaml


def test_scheduler_conf_refuses_unknown_names(demo):
    with pytest.raises(CommandError, match="invalid choice: 'flat'"):
        call_command("scheduler_conf", "--activate", "flat")


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
