"""schedctl output without a server: cell formats, tables, JSON/YAML, and each command's text form."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml

from schedctl import render
from schedctl.jobs import import_summary, job_detail_text, jobs_table
from schedctl.queues import QUEUE_HEADERS, node_row, queue_row, tree_paths
from schedctl.why import explain, headroom, why_text

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("cores", "text"), [
    (4, "4"), (4.0, "4"), (0.5, "500m"), (0.25, "250m"), (1.5, "1500m"), (0.0001, "0.0001"), (None, "-"),
])
def test_cpu(cores, text):
    assert render.cpu(cores) == text


@pytest.mark.parametrize(("amount", "text"), [
    (8 * 2**30, "8Gi"), (512 * 2**20, "512Mi"), (1536 * 2**20, "1536Mi"), (2**40, "1Ti"), (2048, "2Ki"),
    (1000, "1000"), (0, "0"), (float(4 * 2**30), "4Gi"), (1.5, "1.5"), ("x", "x"),
])
def test_memory(amount, text):
    assert render.memory(amount) == text


@pytest.mark.parametrize(("value", "text"), [
    ({"memory": 2**30, "nvidia.com/gpu": 2, "cpu": 2.5}, "cpu=2500m,memory=1Gi,nvidia.com/gpu=2"),
    ({"pods": 110, "cpu": 8}, "cpu=8,pods=110"),
    ({}, "0"),
    (None, "-"),
])
def test_resources(value, text):
    assert render.resources(value) == text


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (45, "45s"), (119, "119s"), (120, "2m"), (200, "3m20s"), (42 * 60, "42m"),
    (3 * 3600 + 60, "3h1m"), (5 * 3600, "5h"), (20 * 3600 + 59, "20h"), (3 * 86400 + 4 * 3600, "3d4h"),
    (2 * 86400, "2d"), (12 * 86400 + 5, "12d"), (-30, "0s"),
])
def test_age(seconds, text):
    created = datetime.fromtimestamp(NOW.timestamp() - seconds, UTC).isoformat().replace("+00:00", "Z")
    assert render.age(created, NOW) == text


def test_age_of_unknown_time():
    assert [render.age(v, NOW) for v in (None, "", "yesterday")] == ["-", "-", "-"]


def test_table_aligns_upper_cases_and_strips():
    text = render.table(["name", "Phase", "reason"], [["a", "Running", ""], ["long-name", None, "x\ny"]])
    assert text.splitlines() == [
        "NAME        PHASE     REASON",
        "a           Running   -",
        "long-name   -         x y",
    ]


def test_dump_json_and_yaml_keep_api_order():
    data = [{"name": "q", "weight": 2, "capability": None}]
    assert json.loads(render.dump(data, "json")) == data
    assert render.dump(data, "json").splitlines()[:3] == ["[", "  {", '    "name": "q",']
    assert render.dump(data, "yaml").splitlines() == ["- name: q", "  weight: 2", "  capability: null"]
    assert yaml.safe_load(render.dump(data, "yaml")) == data


JOB = {
    "id": 7, "uid": "ml/train", "namespace": "ml", "name": "train", "queue": "research", "phase": "Inqueue",
    "min_member": 2, "task_count": None, "running_count": None, "pending_count": None,
    "reason": {"code": "NodeFit", "message": "0/3 nodes are unavailable: 2 Insufficient cpu, 1 "
               "node(s) were unschedulable.", "since": "2026-11-24T11:59:00Z"},
    "created": "2026-11-24T11:58:45Z", "some_new_field": {"ignored": True},
    "reason_details": {"node_failures": {"node(s) were unschedulable": 1, "Insufficient cpu": 2}},
    "tasks": [
        {"name": "train-0", "role": "worker", "status": "Bound", "node": "n0",
         "request": {"cpu": 1, "memory": 2**30}},
        {"name": "train-1", "role": "worker", "status": "Pending", "node": None,
         "request": {"cpu": 1, "memory": 2**30}},
    ],
}


def test_job_get_text(monkeypatch):
    monkeypatch.setattr(render, "utcnow", lambda: NOW)
    assert job_detail_text(JOB).splitlines() == [
        "NAMESPACE   NAME    ID   QUEUE      PHASE     MIN   TASKS   RUNNING   PENDING   REASON    AGE",
        "ml          train   7    research   Inqueue   2     2       0         1         NodeFit   75s",
        "",
        "TASK      ROLE     STATUS    NODE   REQUEST",
        "train-0   worker   Bound     n0     cpu=1,memory=1Gi",
        "train-1   worker   Pending   -      cpu=1,memory=1Gi",
    ]


def test_job_list_uses_the_list_counts(monkeypatch):
    monkeypatch.setattr(render, "utcnow", lambda: NOW)
    row = {**JOB, "task_count": 4, "running_count": 3, "pending_count": 1, "reason": None, "phase": "Running"}
    del row["tasks"]
    assert jobs_table([row]).splitlines()[1] == \
        "ml          train   7    research   Running   2     4       3         1         -        75s"


PATHS = tree_paths({"name": "root", "children": [
    {"name": "research", "state": "Open", "figures": {
        "deserved": {"cpu": 8, "memory": 16 * 2**30}, "allocated": {"cpu": 6, "memory": 4 * 2**30},
        "pending_jobs": 3},
     "children": [
         {"name": "nlp", "figures": {"deserved": {"cpu": 4, "memory": 8 * 2**30},
                                     "allocated": {"cpu": 4.5, "memory": 2**30}, "pending_jobs": 1},
          "children": []}]},
]})


def test_queue_rows():
    nlp = {"name": "nlp", "parent": "research", "state": "Closing", "weight": 2, "reclaimable": False,
           "capability": {"cpu": 16}}
    top = {"name": "research", "parent": None, "state": "Open", "weight": 1, "reclaimable": True,
           "capability": None}
    fresh = {"name": "new", "parent": None, "state": "Open", "weight": 1, "reclaimable": True}
    text = render.table(QUEUE_HEADERS, [queue_row(q, PATHS) for q in (nlp, top, fresh)])
    assert text.splitlines() == [
        "NAME       PARENT     STATE     WEIGHT   RECLAIMABLE   DESERVED            ALLOCATED"
        "              CAPABILITY   PENDING",
        "nlp        research   Closing   2        false         cpu=4,memory=8Gi    cpu=4500m,memory=1Gi"
        "   cpu=16       1",
        "research   root       Open      1        true          cpu=8,memory=16Gi   cpu=6,memory=4Gi"
        "       -            3",
        "new        root       Open      1        true          -                   -"
        "                      -            -",
    ]


def test_node_rows():
    nodes = [
        {"name": "gpu-1", "allocatable": {"cpu": 32, "memory": 128 * 2**30, "pods": 110, "nvidia.com/gpu": 8},
         "unschedulable": True, "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"},
                                           {"key": "dedicated", "value": "", "effect": "NoExecute"}],
         "usage_cpu": 37.5, "usage_memory": 12, "allocated": {"cpu": 2, "nvidia.com/gpu": 1}},
        {"name": "n0", "allocatable": {"cpu": 4, "memory": 8 * 2**30, "pods": 110}, "unschedulable": False,
         "taints": [], "usage_cpu": None, "usage_memory": None},
    ]
    assert [node_row(n) for n in nodes] == [
        ["gpu-1", "SchedulingDisabled", "32", "128Gi", "110", "nvidia.com/gpu=8", "cpu=2,nvidia.com/gpu=1",
         "gpu=true:NoSchedule,dedicated:NoExecute", "37.5%", "12%"],
        ["n0", "Ready", "4", "8Gi", "110", None, "-", "", "-", "-"],  # a server without `allocated`
    ]


def test_import_summary_names_each_object_and_tolerates_new_keys():
    result = {"dry_run": False, "queues_created": ["research"], "queues_updated": ["default"],
              "jobs_created": ["ml/tf"], "priority_classes_created": ["high"], "warnings": "x"}
    assert import_summary(result).splitlines() == [
        "queue research created", "queue default updated", "job ml/tf created", "priorityclass high created"]
    assert import_summary({"dry_run": True, "queues_created": [], "jobs_created": ["ml/tf"]}) == \
        "job ml/tf created (dry run: nothing saved)"
    assert import_summary({"dry_run": False, "jobs_created": []}) == "nothing to do"


def test_headroom_never_negative():
    assert headroom({"cpu": 4, "memory": 8}, {"cpu": 4.5}) == {"cpu": 0.0, "memory": 8.0}
    assert headroom(None, {"cpu": 1}) is None


def test_why_from_the_tree_with_node_failures():
    job = {**JOB, "queue": "nlp"}
    info = explain(job, PATHS)
    assert info["queue_chain_source"] == "tree"
    assert info["queue_chain"][1] == {"queue": "nlp", "deserved": {"cpu": 4, "memory": 8 * 2**30},
                                      "allocated": {"cpu": 4.5, "memory": 2**30},
                                      "headroom": {"cpu": 0, "memory": 7 * 2**30},
                                      "headroom_of": "deserved"}
    assert "estimated_start" not in info
    assert why_text(info).splitlines() == [
        "Job:      ml/train (id 7)",
        "Queue:    nlp",
        "Phase:    Inqueue",
        "Tasks:    1 Pending, 1 Bound; min member 2",
        "Reason:   NodeFit",
        "Message:  0/3 nodes are unavailable: 2 Insufficient cpu, 1 node(s) were unschedulable.",
        "Since:    2026-11-24T11:59:00Z",
        "",
        "Queue chain (top level to the job's queue, newest cycle; headroom = deserved - allocated):",
        "QUEUE      DESERVED            ALLOCATED              HEADROOM",
        "research   cpu=8,memory=16Gi   cpu=6,memory=4Gi       cpu=2,memory=12Gi",
        "nlp        cpu=4,memory=8Gi    cpu=4500m,memory=1Gi   cpu=0,memory=7Gi",
        "",
        "Node failures (nodes that failed one task, by reason):",
        "NODES   REASON",
        "2       Insufficient cpu",
        "1       node(s) were unschedulable",
    ]


def test_why_prefers_the_recorded_chain_and_shows_the_estimate():
    job = {**JOB, "reason": None, "tasks": [], "estimated_start": "2026-11-24T12:25:00Z",
           "estimate_basis": "declared",
           "reason_details": {"queue_chain": [{"queue": "nlp", "deserved": {"cpu": 4},
                                               "allocated": {"cpu": 4}, "headroom": {"cpu": 0},
                                               "real_capability": {"cpu": 8},
                                               "headroom_of": "real_capability"}]}}
    info = explain(job, None)
    assert info["queue_chain_source"] == "reason"
    assert why_text(info).splitlines() == [
        "Job:              ml/train (id 7)",
        "Queue:            research",
        "Phase:            Inqueue",
        "Tasks:            none; min member 2",
        "Reason:           none: the job is not waiting for the scheduler",
        "Estimated start:  2026-11-24T12:25:00Z (declared)",
        "",
        "Queue chain (as the scheduler checked it; headroom = capability (real: capped by what the cluster "
        "has) - allocated):",
        "QUEUE   DESERVED   ALLOCATED   HEADROOM",
        "nlp     cpu=4      cpu=4       cpu=0",
    ]
