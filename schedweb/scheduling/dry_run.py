"""Dry run: one session on the current database state with a candidate configuration; no writes.

Admins try a configuration before activating it. The state is loaded exactly as a cycle loads
it (`adapter.load_state`), the session runs in memory, and the answer says what would change:
binds, pipelined tasks, evictions, job phase changes, reasons, and per-queue deserved /
allocated / share before (the newest cycle's sample) and after.
The session is bounded as a cycle is: each job's evaluation by the work budget
(`SCHEDULER_WORK_BUDGET`, scheduler_core.framework.work_budget), so a costly job is answered as
deferred (reason Deferred) instead of holding the web thread; `work` gives the units, the budget
and the deferred jobs.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from scheduler_core.framework.conf import SchedulerConf, parse_conf
from scheduler_core.scheduler import run_session_isolated
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.cycle import active_conf, with_rescheduling_last_run
from schedweb.scheduling.selectors import latest_samples

BEFORE_FIELDS = ("deserved", "allocated", "share")


def dry_run(*, yaml: str | None = None) -> dict[str, Any]:
    """Run one session with `yaml` (None = the active configuration) and report the changes.

    Raises scheduler_core.framework.conf.ConfError for an invalid configuration.
    """
    conf: SchedulerConf
    if yaml is None or not yaml.strip():
        version, conf = active_conf()
    else:
        version, conf = None, parse_conf(yaml)
    now = timezone.now()
    conf, _ = with_rescheduling_last_run(conf, now.timestamp())
    loaded = []
    _, result = run_session_isolated(lambda: loaded.append(load_state(now)) or loaded[-1].snapshot, conf,
                                     work_budget=getattr(settings, "SCHEDULER_WORK_BUDGET", None))
    state = loaded[-1]
    out = result.to_json()
    out["work"] = result.work
    out["config_version"] = version
    out["job_phase_changes"] = {
        uid: {"from": state.jobs[uid].phase, "to": phase}
        for uid, phase in sorted(out["job_phase"].items())
        if uid in state.jobs and state.jobs[uid].phase != phase
    }
    samples = latest_samples()
    out["queues_before"] = {
        name: {key: _quantities(row.get(key)) if key != "share" else row.get(key) for key in BEFORE_FIELDS}
        for name, row in sorted(samples.items())
    }
    return out


def _quantities(stored: dict[str, float] | None) -> dict[str, float] | None:
    """Stored units to the scenario output units (cpu cores, memory bytes, scalars in units)."""
    if stored is None:
        return None
    from scheduler_core.resources import Resource

    return Resource.from_canonical(stored).to_quantities()
