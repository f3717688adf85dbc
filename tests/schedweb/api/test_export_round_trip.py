"""Export and import are inverse: every job the JSON API accepts exports to a Volcano batch Job
that imports back to the same job (names, per-task requests, node selectors, tolerations,
affinity, priorities, scheduler name), property-tested over generated jobs; plus the
two-template job of the issue that exported as one task; and every NodeShard the API accepts
exports to a shard.volcano.sh NodeShard that imports back to the same shard (and re-imported as
it is, changes nothing)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from schedweb.core.models import Job

from .conftest import make_queue

LABEL = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
REQUEST = st.fixed_dictionaries({"cpu": st.sampled_from(["100m", "500m", "1", "4"])},
                                optional={"memory": st.sampled_from(["512Mi", "1Gi", "8Gi"]),
                                          "nvidia.com/gpu": st.sampled_from(["1", "2"])})
TOLERATION = st.fixed_dictionaries({"key": st.sampled_from(["gpu", "spot"]), "operator": st.just("Equal"),
                                    "value": LABEL, "effect": st.sampled_from(["NoSchedule", "NoExecute"])})
AFFINITY = st.builds(lambda zones: {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": zones}]}]}}},
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True))
TASK = st.fixed_dictionaries({"name": LABEL, "request": REQUEST}, optional={
    "role": st.sampled_from(["", "ps", "worker"]),
    "replicas": st.integers(1, 3),
    "node_selector": st.dictionaries(st.sampled_from(["zone", "disk"]), LABEL, max_size=2),
    "tolerations": st.lists(TOLERATION, max_size=2, unique_by=lambda t: (t["key"], t["effect"])),
    "affinity": AFFINITY,
    "priority": st.integers(-10, 1000),
    "duration": st.sampled_from([60, 600.5]),
})
JOB = st.fixed_dictionaries({"name": LABEL, "queue": st.just("q"),
                             "tasks": st.lists(TASK, min_size=1, max_size=4, unique_by=lambda t: t["name"])},
                            optional={"scheduler_name": st.sampled_from(["volcano", "sched-a", "s.b"])})
FRACTION = st.sampled_from([0, 0.1, 0.25, 0.5, 1 / 3, 1])
SHARD = st.fixed_dictionaries({"name": LABEL}, optional={
    "scheduler_name": LABEL, "mode": st.sampled_from(["hard", "soft"]),
    "nodes_desired": st.lists(LABEL, max_size=4, unique=True), "min_nodes": st.integers(0, 3),
    "max_nodes": st.one_of(st.none(), st.integers(0, 5)), "cpu_utilization_min": FRACTION,
    "cpu_utilization_max": FRACTION})


def _tasks(job: Job) -> dict[str, dict]:
    """What a job is, task by task, for comparing an original with its re-import."""
    return {t.name: {"request": t.request, "node_selector": t.node_selector or {},
                     "tolerations": t.tolerations or [], "affinity": t.affinity or None,
                     "priority": t.priority, "duration": t.duration, "preemptable": t.preemptable}
            for t in job.tasks.order_by("name")}


def _job(namespace: str, name: str) -> dict:
    job = Job.objects.select_related("queue", "priority_class").get(namespace=namespace, name=name)
    return {"queue": job.queue.name, "min_member": job.min_member, "tasks": _tasks(job),
            "scheduler_name": job.scheduler_name,
            "priority_class": job.priority_class.name if job.priority_class_id else None}


def _round_trip(client, namespace: str, name: str) -> tuple[dict, dict, dict]:
    """(the job as stored, the exported Volcano Job, the job as stored after importing it alone)."""
    before = _job(namespace, name)
    exported = client.get(f"/api/v1/manifests/export/?kind=Job&namespace={namespace}")
    assert exported.status_code == 200, exported.content
    docs = [d for d in yaml.safe_load_all(exported.content) if d["metadata"]["name"] == name]
    Job.objects.filter(namespace=namespace, name=name).delete()
    imported = client.generic("POST", "/api/v1/manifests/import/", yaml.safe_dump(docs[0]),
                              content_type="application/yaml")
    assert imported.status_code == 200, imported.content
    return before, docs[0], _job(namespace, name)


@pytest.fixture
def staff_client(make_user, client_for):
    make_queue("q")
    return client_for(make_user("staff", staff=True))


def test_two_templates_export_as_two_volcano_tasks(staff_client):
    body = {"namespace": "ns", "name": "mixed", "queue": "q", "min_member": 2, "tasks": [
        {"name": "small", "request": {"cpu": "1"}, "node_selector": {"zone": "a"}},
        {"name": "big", "request": {"cpu": "4", "memory": "8Gi"},
         "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}]}
    assert staff_client.post("/api/v1/jobs/", body, format="json").status_code == 201
    before, doc, after = _round_trip(staff_client, "ns", "mixed")
    small, big = doc["spec"]["tasks"]
    assert (small["name"], small["replicas"], big["name"], big["replicas"]) == ("small", 1, "big", 1)
    assert small["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    assert small["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert big["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4", "memory": "8Gi"}
    assert big["template"]["spec"]["tolerations"] == body["tasks"][1]["tolerations"]
    # The pods keep their names: not Volcano's <job>-<task>-<i>, so the template lists them.
    assert small["template"]["metadata"]["annotations"]["schedweb.io/task-names"] == "small"
    assert after == before


def test_replicas_export_as_one_volcano_task_per_entry(staff_client):
    body = {"namespace": "ns", "name": "sweep", "queue": "q", "min_member": 3, "tasks": [
        {"name": "worker", "replicas": 2, "request": {"cpu": "2"}},
        {"name": "ps", "replicas": 1, "request": {"cpu": "1"}}]}
    assert staff_client.post("/api/v1/jobs/", body, format="json").status_code == 201
    before, doc, after = _round_trip(staff_client, "ns", "sweep")
    assert [(t["name"], t["replicas"], "metadata" in t["template"]) for t in doc["spec"]["tasks"]] == [
        ("worker", 2, False), ("ps", 1, False)]  # Volcano's own pod names: nothing to list
    assert sorted(after["tasks"]) == ["sweep-ps-0", "sweep-worker-0", "sweep-worker-1"]
    assert after == before


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(job=JOB)
def test_every_accepted_job_exports_and_imports_back_the_same(staff_client, job):
    body = {"namespace": "prop", "min_member": 1, **job}
    response = staff_client.post("/api/v1/jobs/", body, format="json")
    assume(response.status_code == 201)  # the property is about jobs the API accepts
    try:
        before, _, after = _round_trip(staff_client, "prop", job["name"])
        assert after == before
    finally:
        Job.objects.filter(namespace="prop").delete()


def test_a_scheduler_name_kept_in_an_old_passthrough_still_exports(staff_client):
    """Jobs imported before schedulerName was a field keep it in the passthrough."""
    body = {"namespace": "ns", "name": "old", "queue": "q", "tasks": [{"name": "t", "request": {"cpu": "1"}}]}
    assert staff_client.post("/api/v1/jobs/", body, format="json").status_code == 201
    Job.objects.filter(name="old").update(passthrough={"kind": "Job", "spec": {"schedulerName": "legacy"}})
    doc = yaml.safe_load(staff_client.get("/api/v1/manifests/export/?kind=Job").content)
    assert doc["spec"]["schedulerName"] == "legacy"
    Job.objects.filter(name="old").update(scheduler_name="sched-a")  # the field wins once set
    doc = yaml.safe_load(staff_client.get("/api/v1/manifests/export/?kind=Job").content)
    assert doc["spec"]["schedulerName"] == "sched-a"


def _shard(name: str) -> dict:
    from schedweb.core.models import NodeShard

    row = NodeShard.objects.filter(name=name).values().first()
    return {k: v for k, v in row.items() if k in (
        "name", "scheduler_name", "mode", "nodes_desired", "min_nodes", "max_nodes",
        "cpu_utilization_min", "cpu_utilization_max")}


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shard=SHARD)
def test_every_accepted_node_shard_exports_and_imports_back_the_same(staff_client, shard):
    from schedweb.core.models import NodeShard

    response = staff_client.post("/api/v1/nodeshards/", {"scheduler_name": shard["name"], **shard},
                                 format="json")
    assume(response.status_code == 201)
    try:
        before = _shard(shard["name"])
        exported = staff_client.get("/api/v1/manifests/export/?kind=NodeShard")
        [doc] = list(yaml.safe_load_all(exported.content))
        assert (doc["apiVersion"], doc["kind"], doc["spec"]["nodesDesired"]) == (
            "shard.volcano.sh/v1alpha1", "NodeShard", before["nodes_desired"])
        again = staff_client.generic("POST", "/api/v1/manifests/import/", exported.content,
                                     content_type="application/yaml")
        assert again.json()["node_shards_unchanged"] == [shard["name"]], again.json()
        NodeShard.objects.all().delete()
        imported = staff_client.generic("POST", "/api/v1/manifests/import/", exported.content,
                                        content_type="application/yaml")
        assert imported.status_code == 200, imported.content
        assert imported.json()["node_shards_created"] == [shard["name"]]
        assert _shard(shard["name"]) == before
    finally:
        NodeShard.objects.all().delete()
