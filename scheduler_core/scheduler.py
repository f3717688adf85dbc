"""The one entry point: run one scheduling session over a snapshot."""

from __future__ import annotations

import time

from scheduler_core.framework.conf import DEFAULT_CONF, SchedulerConf
from scheduler_core.framework.registry import action_builders, load_all
from scheduler_core.framework.session import close_session, open_session
from scheduler_core.model import ClusterSnapshot
from scheduler_core.result import SessionResult


def run_session(snapshot: ClusterSnapshot, conf: SchedulerConf | None = None) -> SessionResult:
    """Open a session, run the conf's actions in order, close it. Deterministic.

    The snapshot is changed in place (task statuses, node accounting): pass a fresh one.
    An action named in the conf but not implemented is skipped with a warning.
    """
    conf = conf or DEFAULT_CONF
    load_all()
    ssn = open_session(snapshot, conf)
    for name in conf.actions:
        builder = action_builders.get(name)
        if builder is None:
            ssn.result.warn(f"action {name} is not implemented; skipped")
            continue
        started = time.perf_counter()
        builder(conf.configurations.get(name, {})).execute(ssn)
        ssn.result.timing[f"action_{name}_s"] = round(time.perf_counter() - started, 6)
    return close_session(ssn)
