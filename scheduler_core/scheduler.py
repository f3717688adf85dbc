"""The one entry point: run one scheduling session over a snapshot."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from scheduler_core.explain.node_scores import top_count
from scheduler_core.explain.session_hooks import EXPLAIN
from scheduler_core.framework.conf import DEFAULT_CONF, SchedulerConf
from scheduler_core.framework.isolation import JobError, SessionJobError, screen, set_aside
from scheduler_core.framework.kept import KeptState, resolve
from scheduler_core.framework.node_search import NodeScan
from scheduler_core.framework.registry import action_builders, load_all
from scheduler_core.framework.session import close_session, open_session
from scheduler_core.framework.sharding import Sharding
from scheduler_core.model import ClusterSnapshot
from scheduler_core.result import SessionResult


def run_session(snapshot: ClusterSnapshot, conf: SchedulerConf | None = None, *,
                record_scores: bool | int | None = None, node_scan: NodeScan | None = None,
                work_budget: int | None = None, sharding: Sharding | None = None,
                kept: KeptState | bool | None = None) -> SessionResult:
    """Open a session, run the conf's actions in order, close it. Deterministic.

    The snapshot is changed in place (task statuses, node accounting): pass a fresh one.
    `record_scores` (True = top 10 nodes, N = top N, False = off; None = the ambient
    `node_scores.recording_scores` value, off by default) fills `result.node_scores` with the
    per-node, per-plugin scores of each task's last placement try; decisions are the same.
    Jobs with malformed tasks are set aside first (framework.isolation.screen), and a job whose
    evaluation raises is set aside by the action's guard: both get InvalidJob, the rest goes on.
    An action named in the conf but not implemented is skipped with a warning.
    `node_scan`: the feasible-node search's rotating index (framework.node_search), moved on in
    place; keep it from cycle to cycle as Volcano does (None = a fresh one, at the first node).
    `work_budget`: work units one job's evaluation may cost (framework.work_budget; 0 =
    unlimited, None = the process default); a job over it is deferred (reason Deferred).
    `sharding`: this scheduler instance's shard (framework.sharding; None = every node), applied
    in every action: hard mode places only inside it, soft mode tries it first.
    `kept`: the plugins' figures kept across sessions (framework.kept): None = the state this
    snapshot carries (a kept snapshot opens cheaply; a fresh one builds), False = build from
    scratch, or a KeptState the caller keeps next to the snapshot. Decisions are the same.
    """
    conf = conf or DEFAULT_CONF
    load_all()
    with gc_paused():
        started = time.perf_counter()
        state = resolve(snapshot, kept)
        screen(snapshot, state)
        screened = time.perf_counter() - started
        ssn = open_session(snapshot, conf, record_scores=top_count(record_scores), node_scan=node_scan,
                           work_budget=work_budget, sharding=sharding, hooks=EXPLAIN, kept=state)
        ssn.result.timing["screen_s"] = round(screened, 6)
        for name in conf.actions:
            builder = action_builders.get(name)
            if builder is None:
                ssn.result.warn(f"action {name} is not implemented; skipped")
                continue
            started = time.perf_counter()
            if ssn.score_recorder is not None:
                ssn.score_recorder.action = name
            builder(conf.configurations.get(name, {})).execute(ssn)
            ssn.result.timing[f"action_{name}_s"] = round(time.perf_counter() - started, 6)
        result = close_session(ssn)
        ssn.release()
        return result


def run_session_isolated(build: Callable[[], ClusterSnapshot], conf: SchedulerConf | None = None,
                         attempts: int = 4, *, record_scores: bool | int | None = None,
                         node_scan: NodeScan | None = None,
                         work_budget: int | None = None,
                         sharding: Sharding | Callable[[ClusterSnapshot], Sharding | None] | None = None,
                         kept: KeptState | bool | None = None) -> tuple[ClusterSnapshot, SessionResult]:
    """run_session on `build()`; when a job's failure could not be undone inside the session
    (SessionJobError), run again on a fresh `build()` with that job set aside from the start.

    Returns the snapshot the result belongs to (the caller's writes need its identities).
    The last attempt's error propagates: something other than one job is wrong.
    `record_scores`, `node_scan`, `work_budget`, `sharding` and `kept` as for run_session (a
    retry starts from the index the failed attempt started from; a KeptState checks itself
    against the snapshot, so the retry's fresh one is safe with it). `sharding` may also be a
    callable, asked after each build (a caller whose routing reads what the build loaded).
    """
    aside: dict[str, JobError] = {}
    start = node_scan.next_index if node_scan is not None else 0
    for attempt in range(attempts):
        snapshot = build()
        for uid, error in aside.items():
            set_aside(snapshot, uid, error)
        if node_scan is not None:
            node_scan.next_index = start
        shard = sharding(snapshot) if callable(sharding) else sharding
        try:
            return snapshot, run_session(snapshot, conf, record_scores=record_scores, node_scan=node_scan,
                                         work_budget=work_budget, sharding=shard, kept=kept)
        except SessionJobError as exc:
            if attempt == attempts - 1 or exc.job_uid in aside:
                raise
            aside[exc.job_uid] = exc.error
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the session (restored after, even on error).

    A session allocates many small objects while the snapshot keeps tens of thousands alive, so
    the collector's generation scans would otherwise repeatedly walk the whole snapshot for
    nothing: the session makes no reference cycles worth collecting mid-run. Reference counting
    still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
