"""The figures plugins keep across sessions (framework.kept), as comparable plain values."""

from __future__ import annotations

from typing import Any

from scheduler_core.framework.conf import SchedulerConf
from scheduler_core.framework.kept import KeptState
from scheduler_core.framework.session import open_session
from scheduler_core.model import ClusterSnapshot
from scheduler_core.resources import Resource


def _value(v: Any) -> Any:
    return (v.to_quantities(), sorted(v.scalars)) if isinstance(v, Resource) else v


def opened_figures(snap: ClusterSnapshot, conf: SchedulerConf, kept: KeptState | None) -> dict[str, Any]:
    """Open a session (not run) and read what the plugins computed: proportion's and capacity's
    queue attrs, drf's job allocations and shares, overcommit's pools."""
    ssn = open_session(snap, conf, kept=kept)
    out: dict[str, Any] = {}
    for name in ("proportion", "capacity"):
        plugin = ssn.plugins.get(name)
        if plugin is not None:
            out[name] = {q: {k: _value(getattr(a, k)) for k in a.__dataclass_fields__}
                         for q, a in plugin.queue_opts.items()}
    drf = ssn.plugins.get("drf")
    if drf is not None:
        out["drf"] = {uid: (drf.allocated[uid].to_quantities(), drf.shares[uid]) for uid in drf.allocated}
    over = ssn.plugins.get("overcommit")
    if over is not None:
        out["overcommit"] = (over.inqueue_resource.to_quantities(), over.idle_resource.to_quantities())
    ssn.release()
    return out
