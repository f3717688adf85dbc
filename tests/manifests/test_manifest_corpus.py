"""The manifest corpus: every YAML file here, written as Volcano's own examples are, imported
through POST /api/v1/manifests/import/ (dry run, then for real) with the outcome its header
states. Header lines (comments before the first document):

    # expect: ok | 400                 the status of both imports
    # requires: a.yaml b.yaml          imported (and accepted) first
    # created: job:ns/name queue:q priorityclass:pc   the import's *_created lists, in order
    # job: ns/name queue=q min_member=3 roles=ps:1,worker:2 priority_class=high|-
    #      min_task_member=worker:2 task_priority=master:100 request=role:cpu=500,memory=1073741824
    # field: documents[0].spec.tasks[1].name     (400) a field path of the error
    # message: text                               (400) the start of one of that field's messages

An accepted file is then exported and compared with what was imported (Volcano's defaults
added: queue, minAvailable, schedulerName, replicas...; status fields aside), and imported a
third time: everything `unchanged`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from schedweb.core.models import Job, PriorityClass, Queue, Task

CORPUS = Path(__file__).resolve().parent
FILES = sorted(p.name for p in CORPUS.glob("*.yaml"))
CREATED_KEYS = {"job": "jobs_created", "queue": "queues_created", "priorityclass": "priority_classes_created"}


@dataclass
class Case:
    """A corpus file with its header."""

    name: str
    text: str
    expect: str = ""
    requires: list[str] = field(default_factory=list)
    created: dict[str, list[str]] = field(default_factory=dict)
    jobs: list[str] = field(default_factory=list)
    field: str = ""
    message: str = ""


def read_case(name: str) -> Case:
    """The file `name` and the `# key: value` lines of its header."""
    text = (CORPUS / name).read_text()
    case = Case(name, text)
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(": ")
        if not sep:
            continue
        if key == "requires":
            case.requires = value.split()
        elif key == "created":
            for token in value.split():
                kind, _, obj_name = token.partition(":")
                case.created.setdefault(CREATED_KEYS[kind], []).append(obj_name)
        elif key == "job":
            case.jobs.append(value)
        elif key in ("expect", "field", "message"):
            setattr(case, key, value)
    assert case.expect in ("ok", "400"), f"{name}: no '# expect: ok|400' header"
    return case


@pytest.fixture
def staff(db):
    """An APIClient signed in as a staff user (who may create priority classes and top-level queues)."""
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("corpus", is_staff=True))
    return client


def _import(client, text: str, dry_run: bool = False):
    query = "?dry_run=true" if dry_run else ""
    return client.generic("POST", f"/api/v1/manifests/import/{query}", text.encode(),
                          content_type="application/yaml")


def _counts() -> tuple[int, ...]:
    return (PriorityClass.objects.count(), Queue.objects.count(), Job.objects.count(), Task.objects.count())


@pytest.mark.parametrize("name", FILES)
def test_corpus_file(staff, name):
    case = read_case(name)
    for required in case.requires:
        response = _import(staff, read_case(required).text)
        assert response.status_code == 200, (required, response.json())
    before = _counts()
    dry = _import(staff, case.text, dry_run=True)
    assert _counts() == before, "a dry run wrote something"
    real = _import(staff, case.text)
    if case.expect == "400":
        for response in (dry, real):
            assert response.status_code == 400, response.json()
            fields = response.json()["error"]["fields"]
            assert case.field in fields, fields
            assert any(m.startswith(case.message) for m in fields[case.field]), fields[case.field]
        assert dry.json() == real.json()
        assert _counts() == before, "a refused import wrote something"
        return
    assert (dry.status_code, real.status_code) == (200, 200), (dry.json(), real.json())
    for key in CREATED_KEYS.values():
        assert dry.json()[key] == real.json()[key] == case.created.get(key, []), key
    assert dry.json()["dry_run"] is True and real.json()["dry_run"] is False
    for spec in case.jobs:
        _check_job(spec)
    _check_round_trip(staff, case)
    again = _import(staff, case.text).json()
    assert [c["action"] for c in again["changes"]] == ["unchanged"] * len(again["changes"]), again["changes"]


def _pairs(text: str) -> dict[str, str]:
    return dict(item.split(":", 1) for item in text.split(",")) if text else {}


def _check_job(spec: str) -> None:
    """One `# job:` line: the stored job and its tasks."""
    uid, *checks = spec.split()
    namespace, name = uid.split("/")
    job = Job.objects.select_related("queue", "priority_class").get(namespace=namespace, name=name)
    tasks = list(job.tasks.order_by("id"))
    for check in checks:
        key, _, value = check.partition("=")
        if key == "queue":
            assert job.queue.name == value
        elif key == "min_member":
            assert job.min_member == int(value)
        elif key == "priority_class":
            assert (job.priority_class.name if job.priority_class_id else "-") == value
        elif key == "roles":
            counts: dict[str, int] = {}
            for task in tasks:
                counts[task.role] = counts.get(task.role, 0) + 1
            assert counts == {r: int(n) for r, n in _pairs(value).items()}
            # Pods are named as Volcano names them: <job>-<task>-<index>.
            assert [t.name for t in tasks] == [f"{name}-{r}-{i}" for r, n in _pairs(value).items()
                                               for i in range(int(n))]
        elif key == "min_task_member":
            assert job.min_task_member == {r: int(n) for r, n in _pairs(value).items()}
        elif key == "task_priority":
            assert {t.role: t.priority for t in tasks} == {r: int(n) for r, n in _pairs(value).items()}
        elif key == "request":
            role, _, resources = value.partition(":")
            want = {k: float(v) for k, v in (item.split("=") for item in resources.split(","))}
            assert next(t for t in tasks if t.role == role).request == want
        else:
            raise AssertionError(f"unknown job check {key!r}")


def _check_round_trip(client, case: Case) -> None:
    """Export gives back each imported document (with Volcano's defaults), status aside."""
    exported: dict[tuple[str, str], dict] = {}
    for kinds in ("kind=PriorityClass&kind=Queue&kind=Job", "kind=PodGroup"):
        response = client.get(f"/api/v1/manifests/export/?{kinds}")
        assert response.status_code == 200
        for doc in yaml.safe_load_all(response.content.decode()):
            exported[_key(doc)] = doc
    for doc in yaml.safe_load_all(case.text):
        assert exported[_key(doc)] == with_defaults(doc), _key(doc)


def _key(doc: dict) -> tuple[str, str]:
    meta = doc["metadata"]
    namespaced = doc["kind"] in ("Job", "PodGroup", "Pod")
    return doc["kind"], f"{meta.get('namespace') or 'default'}/{meta['name']}" if namespaced else meta["name"]


def with_defaults(doc: dict) -> dict:
    """`doc` as the export writes it: the defaults Volcano's and Kubernetes' admission fill in."""
    doc = yaml.safe_load(yaml.safe_dump(doc))
    kind, spec = doc["kind"], doc.get("spec") or {}
    if kind in ("Job", "PodGroup", "Pod"):
        doc["metadata"].setdefault("namespace", "default")
    if kind == "Job":
        tasks = spec["tasks"]
        for i, task in enumerate(tasks):
            task.setdefault("name", f"default{i}")
            task.setdefault("replicas", 1)
            task.setdefault("template", {})
        spec["minAvailable"] = spec.get("minAvailable") or sum(t.get("minAvailable", t["replicas"])
                                                               for t in tasks)
        spec.setdefault("schedulerName", "volcano")
        spec.setdefault("queue", settings.DEFAULT_QUEUE)
        default = PriorityClass.objects.filter(global_default=True).first()
        if default is not None:
            spec.setdefault("priorityClassName", default.name)
    elif kind == "PodGroup":
        spec.setdefault("queue", settings.DEFAULT_QUEUE)
        spec.setdefault("minMember", 1)
    elif kind == "Queue":
        spec.setdefault("weight", 1)
        spec.setdefault("reclaimable", True)
        spec.setdefault("parent", "root")
        if not spec.get("priority"):
            spec.pop("priority", None)
        doc.setdefault("status", {"state": "Open"})
    elif kind == "PriorityClass":
        doc["apiVersion"] = "scheduling.k8s.io/v1"
        doc.setdefault("globalDefault", False)
        doc.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if not doc.get("description"):
            doc.pop("description", None)
    return doc


def test_every_file_states_its_outcome():
    cases = [read_case(name) for name in FILES]
    assert len(cases) >= 60
    assert all(c.field and c.message for c in cases if c.expect == "400")
    assert all(c.created for c in cases if c.expect == "ok")
    assert {r for c in cases for r in c.requires} <= set(FILES)


def test_the_default_queue_takes_jobs_that_name_none(staff):
    """Issue 23's acceptance: a job with no queue lands in the default queue."""
    assert _import(staff, read_case("job-no-queue.yaml").text).status_code == 200
    assert Job.objects.get(name="no-queue").queue.name == "default" == settings.DEFAULT_QUEUE


def test_task_priority_setup_works_from_files_alone(staff):
    """Issue 23's acceptance: two PriorityClasses, then a job using them, from the files alone."""
    for name in ("priority-classes.yaml", "task-priority-job.yaml"):
        assert _import(staff, read_case(name).text).status_code == 200
    job = Job.objects.get(name="priority-job")
    assert [(t.name, t.priority) for t in job.tasks.order_by("id")] == [
        ("priority-job-master-0", 100), ("priority-job-worker-0", 1), ("priority-job-worker-1", 1)]
    # The master's template sorts first, so the gang's minResources count it before the workers.
    assert job.min_resources == {"cpu": 1500.0, "memory": 0.0}
