"""Each plugin times its own session open and close (Volcano's per-plugin scheduling latency).

`result.timing` names the plugin (`plugin_<name>_open_s`, `plugin_<name>_close_s`), so a profile
or the metrics blame the plugin, not the framework. Durations are never asserted, only the keys.
"""

from __future__ import annotations

from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import conf, job, node, snapshot, task


def _keys(timing: dict[str, float]) -> list[str]:
    return sorted(k for k in timing if k.startswith("plugin_"))


def test_every_configured_plugin_has_an_open_and_a_close_time():
    snap = snapshot(nodes=[node("n1")], jobs=[job("j", tasks=[task("t")])])
    # A plugin whose extension points are all switched off still opens and closes.
    cfg = conf("enqueue, allocate", [["priority", "gang"],
                                     ["drf", {"name": "nodeorder", "enabledNodeOrder": False}]])
    timing = run_session(snap, cfg).timing
    assert _keys(timing) == [f"plugin_{name}_{step}_s" for name in ("drf", "gang", "nodeorder", "priority")
                             for step in ("close", "open")]
    assert all(isinstance(timing[k], float) and timing[k] >= 0 for k in _keys(timing))


def test_a_plugin_named_but_not_implemented_has_no_time():
    snap = snapshot(nodes=[node("n1")])
    cfg = conf("allocate", [["gang"]])
    cfg.tiers[0].plugins[0].name = "missing"  # parse_conf refuses unknown names; a stale conf may not
    result = run_session(snap, cfg)
    assert _keys(result.timing) == []
    assert result.warnings == ["plugin missing is not implemented; skipped"]
