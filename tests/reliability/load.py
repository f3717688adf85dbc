"""HTTP load against a real server: clients submitting (with Idempotency-Key retries), cancelling
and reading. Every answer is classified; an accepted submission is remembered by its key and id so
the tests can compare what the clients were told with what the database holds.

With `poison=True` the load first stores one poison job straight through the ORM (issue 15: a
task with no request and a malformed affinity, which once made every cycle fail); `cycle_health`
then counts the cycles that ran and failed, before and after it, for the soak summary.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import requests
from django.utils import timezone

DB_DOWN_BODY = {"error": {"code": "database_unavailable", "fields": {},
                          "message": "The database is unavailable right now; please retry shortly."}}
TIMEOUT = 30.0
POISON_NAMESPACE = "poison"
POISON_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}


@dataclass
class LoadStats:
    """What the clients saw (shared by all client threads, guarded by `lock`)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    connection_errors: int = 0
    db_down_503: int = 0   # 503 with the database-down body and Retry-After
    unexpected_503: int = 0  # ... of them while the test said the database was up
    errors: list[str] = field(default_factory=list)   # 5xx other than a proper 503, bad replays
    accepted: dict[str, int] = field(default_factory=dict)  # idempotency key -> job id (201)
    replays: int = 0
    unresolved: list[tuple[str, dict]] = field(default_factory=list)  # keys never answered 201
    cancels: int = 0
    poisoned_at: datetime | None = None  # when the poison job was stored (poison=True)

    def error(self, text: str) -> None:
        """Record one failure (kept short: the first 50 are enough to debug)."""
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(text)
            else:
                self.errors.append("...")

    @property
    def server_errors(self) -> int:
        """Answers 500-599 that were not the database-down 503."""
        return sum(n for code, n in self.statuses.items() if code >= 500) - self.db_down_503

    def as_json(self) -> dict:
        """Counts for the soak summary."""
        return {"requests": self.requests, "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
                "connection_errors": self.connection_errors, "db_down_503": self.db_down_503,
                "unexpected_503": self.unexpected_503, "server_errors": self.server_errors,
                "accepted": len(self.accepted), "replays": self.replays, "cancels": self.cancels,
                "errors": len(self.errors)}


class Client:
    """One API client (its own HTTP session) that classifies every answer into `stats`."""

    def __init__(self, base_url: str, token: str, stats: LoadStats, *, allow_db_down: bool) -> None:
        self.base = base_url.rstrip("/") + "/api/v1"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        self.stats = stats
        self.allow_db_down = allow_db_down

    def call(self, method: str, path: str, **kwargs) -> requests.Response | None:
        """One request; None on a connection error. 5xx other than the JSON 503 is an error."""
        try:
            response = self.session.request(method, self.base + path, timeout=TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            with self.stats.lock:
                self.stats.requests += 1
                self.stats.connection_errors += 1
            self.stats.error(f"{method} {path}: connection error {type(exc).__name__}")
            return None
        code = response.status_code
        with self.stats.lock:
            self.stats.requests += 1
            self.stats.statuses[code] += 1
        if code == 503 and self._db_down_body(response):
            with self.stats.lock:
                self.stats.db_down_503 += 1
                self.stats.unexpected_503 += not self.allow_db_down
        elif code >= 500:
            self.stats.error(f"{method} {path}: {code} {response.text[:300]}")
        return response

    @staticmethod
    def _db_down_body(response: requests.Response) -> bool:
        try:
            return response.json() == DB_DOWN_BODY and response.headers.get("Retry-After") == "5"
        except ValueError:
            return False

    def submit(self, key: str, body: dict, deadline: float) -> int | None:
        """POST the job until it is accepted (same key on every retry) or `deadline`; its id or None."""
        while time.monotonic() < deadline:
            response = self.call("POST", "/jobs/", json=body, headers={"Idempotency-Key": key})
            if response is not None and response.status_code == 201:
                job_id = response.json()["id"]
                with self.stats.lock:
                    known = self.stats.accepted.setdefault(key, job_id)
                    if response.headers.get("Idempotent-Replayed") == "true":
                        self.stats.replays += 1
                if known != job_id:
                    self.stats.error(f"key {key}: accepted as job {known}, then as job {job_id}")
                return job_id
            if response is not None and response.status_code == 429:
                time.sleep(0.5)  # a limit (waiting jobs, request rate): later, with the same key
                continue
            if response is not None and response.status_code < 500:
                self.stats.error(f"POST /jobs/ {key}: {response.status_code} {response.text[:300]}")
                return None
            time.sleep(0.2)  # 503 or no answer: retry the same key
        with self.stats.lock:
            self.stats.unresolved.append((key, body))
        return None


def job_body(namespace: str, name: str, queue: str, rng: random.Random) -> dict:
    """A small gang (1-2 tasks of half a core, running 0.5-1.5 s under the simulated agent)."""
    n = rng.randint(1, 2)
    duration = round(rng.uniform(0.5, 1.5), 2)
    return {"namespace": namespace, "name": name, "queue": queue, "min_member": n,
            "tasks": [{"name": f"{name}-{i}", "request": {"cpu": "500m", "memory": "256Mi"},
                       "duration": duration} for i in range(n)]}


def client_loop(client: Client, index: int, *, namespace: str, queue: str, until: float, seed: int) -> None:
    """Submit (half), replay a key (now and then), cancel, and read, until `until`."""
    rng = random.Random(seed * 1000 + index)
    mine: list[int] = []
    n = 0
    while time.monotonic() < until:
        roll = rng.random()
        if roll < 0.45:
            name = f"c{index}-{n}"
            n += 1
            key = f"{namespace}-{name}"
            body = job_body(namespace, name, queue, rng)
            job_id = client.submit(key, body, until + 10)
            if job_id is not None:
                mine.append(job_id)
                if rng.random() < 0.15:  # a client that did not see the answer retries the key
                    client.submit(key, body, until + 10)
        elif roll < 0.55 and mine:
            job_id = mine.pop(rng.randrange(len(mine)))
            response = client.call("POST", f"/jobs/{job_id}/cancel/")
            if response is not None and response.status_code == 200:
                with client.stats.lock:
                    client.stats.cancels += 1
        elif roll < 0.75 and mine:
            client.call("GET", f"/jobs/{rng.choice(mine)}/")
        elif roll < 0.9:
            client.call("GET", "/jobs/", params={"namespace": namespace, "limit": 20})
        else:
            client.call("GET", rng.choice(["/queues/", "/nodes/", "/cycles/"]))


def submit_poison_job(queue: str) -> int:
    """Store the issue-15 poison job through the ORM, past the API's validation (as a bug, an
    older version or a direct database write could have): one task, no resource request,
    affinity `requiredDuringSchedulingIgnoredDuringExecution: "x"`. Returns its id."""
    from schedweb.core.models import Job, Queue, Task

    job = Job.objects.create(namespace=POISON_NAMESPACE, name="poison", min_member=1,
                             queue=Queue.objects.get(name=queue))
    Task.objects.create(job=job, name="poison-0", request={}, affinity=POISON_AFFINITY)
    return job.id


def cycle_health(since: datetime, poisoned_at: datetime | None = None) -> dict[str, int]:
    """Cycles that ran (not skipped for another leader) since `since`, how many failed (an error
    recorded), and how many of those started after the poison job was stored."""
    from django.db import connections

    from schedweb.scheduling.models import CycleRun

    connections.close_all()  # a fresh connection: the old one may have died with a restart
    ran = CycleRun.objects.filter(started__gt=since, skipped=False)
    failed = ran.exclude(errors="")
    after = failed.filter(started__gt=poisoned_at).count() if poisoned_at is not None else 0
    return {"cycles_run": ran.count(), "cycles_failed": failed.count(), "cycles_failed_after_poison": after}


def p99(values: list[float]) -> float:
    """The 99th percentile of `values` (the nearest rank below; 0 when empty)."""
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))] if values else 0.0


def cycle_cost(window: str, since: datetime, until: datetime | None = None) -> dict[str, object]:
    """The cycles of a window for the soak report: `{window}_cycles`, `{window}_p99_s` (wall) and
    `{window}_cpu_p99_s` (the scheduler process's CPU in the cycle, `timing.cpu_s`: what the
    cycle cost, whoever else shared the machine's cores meanwhile)."""
    from django.db import connections

    from schedweb.scheduling.models import CycleRun

    connections.close_all()
    runs = CycleRun.objects.filter(started__gt=since, skipped=False)
    if until is not None:
        runs = runs.filter(started__lte=until)
    rows = list(runs.values_list("id", "duration_seconds", "timing"))
    cpu = [float((timing or {}).get("cpu_s", 0.0)) for _, _, timing in rows]
    # The costliest cycle's own figures: what an outlier spent its time on.
    worst = max(rows, key=lambda r: float((r[2] or {}).get("cpu_s", 0.0)), default=None)
    return {f"{window}_cycles": len(rows), f"{window}_p99_s": p99([d or 0.0 for _, d, _ in rows]),
            f"{window}_cpu_p99_s": p99(cpu),
            f"{window}_worst": None if worst is None else {"id": worst[0], "wall_s": worst[1],
                                                          "timing": worst[2]}}


def run_load(base_url: str, token: str, *, clients: int, seconds: float, namespace: str, queue: str,
             allow_db_down: bool = False, seed: int = 7, stats: LoadStats | None = None,
             poison: bool = False) -> LoadStats:
    """Run `clients` threads for `seconds` (after storing the poison job when `poison`); then retry
    unresolved submissions (same keys) to the end."""
    stats = stats or LoadStats()
    if poison:
        submit_poison_job(queue)
        stats.poisoned_at = timezone.now()
    until = time.monotonic() + seconds
    kwargs = {"namespace": namespace, "queue": queue, "until": until, "seed": seed}
    threads = [threading.Thread(target=client_loop, kwargs=kwargs, daemon=True,
                                args=(Client(base_url, token, stats, allow_db_down=allow_db_down), i))
               for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 120)
    resolve_unresolved(base_url, token, stats, allow_db_down=allow_db_down)
    return stats


def resolve_unresolved(base_url: str, token: str, stats: LoadStats, *, allow_db_down: bool) -> None:
    """Retry every key that never got its 201 (the service is back by now): none may stay unknown."""
    pending, stats.unresolved = stats.unresolved, []
    client = Client(base_url, token, stats, allow_db_down=allow_db_down)
    for key, body in pending:
        client.submit(key, body, time.monotonic() + 60)
