"""schedctl against a live test server: the issue's acceptance (submit, why, cancel), job listing,
dry runs, queues, nodes, API errors, and the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from schedctl import render
from schedweb.core import services
from schedweb.core.models import Job, Node, Queue
from schedweb.scheduling.cycle import cycle_run
from tests.schedctl.support import Run

# Sequences reset: job ids are known (1, 2, ... in submission order) and so are table widths.
pytestmark = pytest.mark.django_db(transaction=True, reset_sequences=True)

T0 = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)

# The default configuration without binpack/nodeorder, so the nodes chosen are known.
SIMPLE_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""

# A gang of two that fits, and a job whose node selector no node matches.
VCJOBS = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: q
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: "1", memory: 1Gi}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: picky, namespace: ml}
spec:
  minAvailable: 1
  queue: q
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        nodeSelector: {zone: mars}
        containers:
        - name: main
          resources: {requests: {cpu: 500m, memory: 512Mi}}
"""


@pytest.fixture
def cluster(server):
    """Queues q and spare, nodes n0 and n1 (4 cpu, 8Gi) and a cordoned, tainted gpu-0."""
    # The migrations' default queue holds id 1, which reset_sequences hands out again: drop it
    # (the ORM, not the service, which protects it); a job naming no queue re-creates it.
    Queue.objects.filter(name="default").delete()
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    services.queue_create(name="q", weight=2)
    services.queue_create(name="spare", capability={"cpu": "8", "memory": "16Gi"}, reclaimable=False)
    for name in ("n0", "n1"):
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    services.node_create(name="gpu-0", allocatable={"cpu": "16", "memory": "64Gi", "pods": 32,
                                                    "nvidia.com/gpu": 2},
                         taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}], unschedulable=True)
    return server


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _ids() -> dict[str, int]:
    return dict(Job.objects.values_list("name", "id"))


def _names(text: str) -> list[str]:
    """Names of the objects of a JSON or YAML list output."""
    return [item["name"] for item in yaml.safe_load(text)]


def test_submit_why_cancel(cluster, tmp_path):
    """The issue's acceptance: submit a vcjob manifest, ask why after one cycle, cancel it."""
    run = cluster.run
    manifest = _file(tmp_path, "jobs.yaml", VCJOBS)
    assert run("job", "submit", "-f", manifest) == Run(0, "job ml/train created\njob ml/picky created\n", "")
    cycle_run(now=T0)
    ids = _ids()

    picky = run("why", "ml/picky")
    assert picky.code == 0 and picky.err == ""
    assert picky.out.splitlines() == [
        f"Job:              ml/picky (id {ids['picky']})",
        "Queue:            q",
        "Phase:            Inqueue",
        "Tasks:            1 Pending; min member 1",
        "Reason:           NeverFits",
        "Message:          a main task can run on no node: 0/3 nodes match its selector, affinity and "
        "tolerations (2 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable)",
        "Since:            2026-11-24T12:00:00Z",
        "Estimated start:  no estimate: no forecast has run yet",
        "",
        "Queue chain (top level to the job's queue, newest cycle; headroom = deserved - allocated):",
        "QUEUE   DESERVED                  ALLOCATED          HEADROOM",
        "q       cpu=2500m,memory=2560Mi   cpu=2,memory=2Gi   cpu=500m,memory=512Mi",
        "",
        "Node failures (nodes that failed one task, by reason):",
        "NODES   REASON",
        "2       node(s) didn't match Pod's node affinity/selector",
        "1       node(s) were unschedulable",
    ]
    assert run("why", str(ids["picky"])) == picky  # the id names the same job

    train = run("why", "ml/train")
    assert train.out.splitlines()[:6] == [
        f"Job:              ml/train (id {ids['train']})",
        "Queue:            q",
        "Phase:            Inqueue",
        "Tasks:            2 Binding; min member 2",
        "Reason:           none: the job is not waiting for the scheduler",
        "Estimated start:  no estimate: no forecast has run yet",
    ]
    info = json.loads(run("why", "ml/train", "-o", "json").out)
    assert (info["reason"], info["tasks"], info["queue_chain_source"]) == (None, {"Binding": 2}, "tree")
    assert info["queue_chain"] == [{"queue": "q", "deserved": {"cpu": 2.5, "memory": 2560 * 2**20},
                                    "allocated": {"cpu": 2, "memory": 2 * 2**30},
                                    "headroom": {"cpu": 0.5, "memory": 512 * 2**20},
                                    "headroom_of": "deserved"}]

    assert run("job", "cancel", "ml/train") == Run(0, "job ml/train cancelled\n", "")
    assert Job.objects.get(id=ids["train"]).phase == "Cancelled"
    detail = yaml.safe_load(run("job", "get", str(ids["train"]), "-o", "yaml").out)
    # Its bound tasks are released (the node agent reports them gone).
    assert (detail["phase"], [t["status"] for t in detail["tasks"]]) == ("Cancelled", ["Releasing"] * 2)


def test_job_list_get_and_json_submit(cluster, tmp_path, monkeypatch):
    run = cluster.run
    body = {"namespace": "ml", "name": "solo", "queue": "spare", "tasks": [
        {"name": "solo-0", "role": "main", "request": {"cpu": "250m", "memory": "512Mi"}}]}
    solo = run("job", "submit", "-f", _file(tmp_path, "solo.json", json.dumps(body, indent=2)))
    assert run("job", "submit", "-f", _file(tmp_path, "jobs.yaml", VCJOBS)).code == 0
    ids = _ids()
    assert solo == Run(0, f"job ml/solo created (id {ids['solo']})\n", "")
    # AGE needs a known clock: every job created at T0, the command run 75 s later.
    Job.objects.update(created=T0)
    monkeypatch.setattr(render, "utcnow", lambda: T0 + timedelta(seconds=75))

    listed = run("job", "list", "-A")
    assert listed.code == 0 and listed.err == "jobs 1-3 of 3, newest first\n"
    assert ids == {"solo": 1, "train": 2, "picky": 3}
    assert listed.out.splitlines() == [  # newest first (same created: the higher id first)
        "NAMESPACE   NAME    ID   QUEUE   PHASE     MIN   TASKS   RUNNING   PENDING   REASON   AGE",
        "ml          picky   3    q       Pending   1     1       0         1         -        75s",
        "ml          train   2    q       Pending   2     2       0         2         -        75s",
        "ml          solo    1    spare   Pending   1     1       0         1         -        75s",
    ]
    assert _names(run("job", "list", "-A", "--queue", "spare", "-o", "json").out) == ["solo"]
    assert _names(run("job", "list", "-A", "--queue", "q", "-o", "json").out) == ["picky", "train"]
    assert _names(run("job", "list", "-n", "ml", "--limit", "1", "-o", "yaml").out) == ["picky"]
    assert run("job", "list", "-A", "--state", "Running,Completed") == Run(0, "", "No jobs found.\n")
    assert run("job", "list", "--namespace", "other") == Run(0, "", "No jobs found in namespace other.\n")
    # vcctl's rule: without -n or -A, the namespace `default`.
    assert run("job", "list") == Run(0, "", "No jobs found in namespace default. (-A: every namespace)\n")
    second = run("job", "list", "-n", "ml", "--limit", "2", "--page", "2")
    assert second.out.splitlines()[1:] == [
        "ml          solo   1    spare   Pending   1     1       0         1         -        75s"]
    assert second.err == "jobs 3-3 of 3, newest first\n"
    first = run("job", "list", "-n", "ml", "--limit", "2")
    assert first.err == "jobs 1-2 of 3, newest first; next page: schedctl job list -n ml --limit 2 --page 2\n"

    assert run("job", "get", "ml/solo").out.splitlines() == [
        "NAMESPACE   NAME   ID   QUEUE   PHASE     MIN   TASKS   RUNNING   PENDING   REASON   AGE",
        "ml          solo   1    spare   Pending   1     1       0         1         -        75s",
        "",
        "TASK     ROLE   STATUS    NODE   REQUEST",
        "solo-0   main   Pending   -      cpu=250m,memory=512Mi",
    ]
    assert json.loads(run("job", "get", "1", "-o", "json").out)["tasks"][0]["request"] == \
        {"cpu": 0.25, "memory": 512 * 2**20}


def test_dry_runs_save_nothing(cluster, tmp_path):
    from schedctl.client import ApiClient
    from schedctl.jobs import _jobs_dry_run_supported

    run = cluster.run
    # The server's preview of each job: where it would go in the next cycle, and when it would start.
    assert run("job", "submit", "--dry-run", "-f", _file(tmp_path, "jobs.yaml", VCJOBS)) == Run(0, (
        "job ml/train created (dry run: nothing saved): would be bound to n0\n"
        "  expected to start in the next scheduling cycle, if running jobs end as declared\n"
        "job ml/picky created (dry run: nothing saved): would never run: NeverFits: a main task can run on "
        "no node: 0/3 nodes match its selector, affinity and tolerations (2 node(s) didn't match Pod's node "
        "affinity/selector, 1 node(s) were unschedulable)\n"
        "  not expected to start: it cannot run on the cluster as it stands\n"), "")
    assert not Job.objects.exists()
    assert run("job", "get", "ml/train") == Run(1, "", "schedctl: 404 not_found: No job ml/train.\n")
    body = _file(tmp_path, "solo.json", json.dumps({"namespace": "ml", "name": "solo", "queue": "q",
                                                    "tasks": [{"name": "solo-0"}]}))
    result = run("job", "submit", "--dry-run", "-f", body)
    # The jobs endpoint's own dry run is used once the server's schema offers it (issue 20).
    if _jobs_dry_run_supported(ApiClient(cluster.url, cluster.token)):
        assert result == Run(0, "job ml/solo checked (dry run: nothing saved): would be bound to n0\n"
                                "  expected to start in the next scheduling cycle, if running jobs end as "
                                "declared\n", "")
    else:
        assert result == Run(2, "", "schedctl: --dry-run needs a YAML manifest: this server's POST "
                                    "/api/v1/jobs/ has no dry run\n")
    assert not Job.objects.exists()


def test_queue_commands(cluster, tmp_path):
    run = cluster.run
    assert run("queue", "get", "spare").out.splitlines() == [
        "NAME    PARENT   STATE   WEIGHT   RECLAIMABLE   DESERVED   ALLOCATED   CAPABILITY          PENDING",
        "spare   root     Open    1        false         -          0           cpu=8,memory=16Gi   0",
    ]
    assert run("queue", "close", "spare") == Run(0, "queue spare closed\n", "")
    assert json.loads(run("queue", "get", "spare", "-o", "json").out)["state"] == "Closed"
    opened = yaml.safe_load(run("queue", "open", "spare", "-o", "yaml").out)
    assert (opened["name"], opened["state"], opened["parent"]) == ("spare", "Open", None)
    assert run("queue", "close", "spare").code == 0
    assert run("queue", "open", "spare") == Run(0, "queue spare opened\n", "")

    assert run("job", "submit", "-f", _file(tmp_path, "jobs.yaml", VCJOBS)).code == 0
    cycle_run(now=T0)
    # A queue with bound work closes only once that work is done.
    assert run("queue", "close", "q") == Run(0, "queue q closing (its running jobs finish first)\n", "")
    # Other queues (a default queue, say) may exist: compare these rows' cells.
    rows = {line.split()[0]: line.split() for line in run("queue", "list").out.splitlines()}
    assert rows["NAME"] == ["NAME", "PARENT", "STATE", "WEIGHT", "RECLAIMABLE", "DESERVED", "ALLOCATED",
                            "CAPABILITY", "PENDING"]
    assert rows["q"] == ["q", "root", "Closing", "2", "true", "cpu=2500m,memory=2560Mi", "cpu=2,memory=2Gi",
                         "-", "2"]
    assert rows["spare"] == ["spare", "root", "Open", "1", "false", "-", "0", "cpu=8,memory=16Gi", "0"]
    names = _names(run("queue", "list", "-o", "json").out)
    assert {"q", "spare"} <= set(names) and names == sorted(names)


NODE_TABLE = [
    "NAME    STATUS               CPU   MEMORY   PODS   OTHER              ALLOCATED              "
    "TAINTS                CPU USAGE   MEMORY USAGE",
    "gpu-0   SchedulingDisabled   16    64Gi     32     nvidia.com/gpu=2   0                      "
    "gpu=true:NoSchedule   -           -",
    "n0      Ready                4     8Gi      110    -                  cpu=1500m,memory=1Gi   "
    "-                     37.5%       10%",
    "n1      Ready                4     8Gi      110    -                  0                      "
    "-                     -           -",
]


def _n0_used() -> None:
    """n0's usage report, and a Running task on it (its ALLOCATED)."""
    services.node_heartbeat(node=Node.objects.get(name="n0"), usage_cpu=37.5, usage_memory=10)
    job = services.job_submit(namespace="ml", name="held", queue="q", tasks=[
        {"name": "w", "request": {"cpu": "1500m", "memory": "1Gi"}}])
    job.tasks.update(status="Running", node=Node.objects.get(name="n0"))


def test_node_list(cluster):
    _n0_used()
    assert cluster.run("node", "list") == Run(0, "\n".join(NODE_TABLE) + "\n", "")
    assert _names(cluster.run("node", "list", "-o", "json").out) == ["gpu-0", "n0", "n1"]


def test_console_script_and_module(cluster):
    """The installed `schedctl` and `python -m schedctl`, configured by environment variables."""
    _n0_used()
    script = Path(sys.executable).with_name("schedctl")
    assert script.exists(), "schedctl is not installed: run scripts/ensure_venv.sh"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "SCHEDCTL_SERVER": cluster.url,
           "SCHEDCTL_TOKEN": cluster.token}
    for argv in ([str(script)], [sys.executable, "-m", "schedctl"]):
        done = subprocess.run([*argv, "node", "list"], env=env, capture_output=True, text=True, timeout=60,
                              cwd="/")
        # The installed package may be another checkout's (a shared virtualenv): its columns are
        # test_node_list's concern; here the script runs, reaches the server and lists the nodes.
        assert (done.returncode, done.stderr) == (0, "")
        assert [line.split()[0] for line in done.stdout.splitlines()] == ["NAME", "gpu-0", "n0", "n1"]
    done = subprocess.run([str(script), "why", "nope"], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        2, "schedctl: JOB must be a job id or namespace/name, not 'nope'\n")


def test_api_errors(cluster, tmp_path):
    run = cluster.run
    assert run("job", "list", token=None) == Run(1, "", (
        "schedctl: 401 not_authenticated: Authentication credentials were not provided. (no token: set "
        "SCHEDCTL_TOKEN, token: in the config file, or --token)\n"))
    assert run("node", "list", token="swt_wrong") == Run(
        1, "", "schedctl: 401 authentication_failed: Invalid, expired or revoked token.\n")
    assert run("queue", "get", "nope") == Run(1, "", "schedctl: 404 not_found: Not found.\n")
    assert run("job", "cancel", "999999") == Run(1, "", "schedctl: 404 not_found: Not found.\n")
    bad = _file(tmp_path, "bad.yaml", "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                      "metadata: {name: x}\nspec:\n  weight: 0\n")
    assert run("job", "submit", "-f", bad) == Run(
        1, "", f"schedctl: 400 invalid: documents[0].spec.weight: Weight must be at least 1. ({bad}:5)\n")
    body = _file(tmp_path, "job.json", json.dumps({"namespace": "ml", "name": "solo", "queue": "q", "tasks": [
        {"name": "solo-0", "request": {"cpu": "lots"}}]}, indent=2))
    result = run("job", "submit", "-f", body)
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith("schedctl: 400 invalid: tasks[0].request: cpu: invalid quantity 'lots'")
    assert result.err.endswith(f" ({body}:8)\n")
    assert not Job.objects.exists()
