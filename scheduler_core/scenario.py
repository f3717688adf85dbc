"""Scenario files (docs: docs/scenario-format.md): YAML/JSON -> snapshot, conf, expect.

`load_scenario(path_or_text, filename=...)` returns a `Scenario(snapshot, conf, expect, source)`
or raises `ScenarioError(filename, line, message)`; `run_scenario` runs one session on it. The web
app reuses the loader to import clusters. Rules and defaults beyond the format page:

- `now:` (optional top-level key, ISO-8601 or unix seconds) is the session's clock. Default:
  the latest job `created` plus one hour, so runs are deterministic. A job without `created`
  is created at DEFAULT_EPOCH (2026-01-01T00:00:00Z); its tasks share the job's time.
- Omitted `config:` means Volcano's default configuration (DEFAULT_CONF). `configurations:` may
  sit at the top level (as on the format page) or inside `config:`, not both.
- `options:` (optional) sets the scheduler-level options for this scenario over the conf's
  (the feasible-node search limit: `minimum_feasible_nodes`, `minimum_percentage_nodes_to_find`,
  `percentage_nodes_to_find`; dashes accepted too); the conf may carry them as top-level keys.
- `sharding:` (optional) is this scheduler's shard view (`framework.sharding.Sharding`: `mode`
  none | hard | soft, `shard_name`, `nodes_in_shard` naming listed nodes, each once;
  `scheduler_name`, default volcano, and `schedulers`, every shard's scheduler name), passed to
  the session; `simulate --json` shows it with the placements outside the shard. A job's
  `scheduler_name` (default volcano) routes it (`framework.sharding.responsible`): the jobs of
  another instance are `foreign_jobs`.
- Job defaults: namespace `default`, queue `default` (must exist), min_member 1, priority
  from `priority_class` (else 0). Task defaults: priority = explicit `priority`, else the task's
  `priority_class`, else the job's; preemption policy from the same class; `preemptable` from
  the job. A Pending task with a node is Bound; Allocated/Binding/Bound/Running/Releasing/
  Pipelined tasks need a node.
- A node without `pods` in `allocatable` gets Kubernetes' default of 110; node `usage`
  percentages are taken as measured at `now`.
- Namespaces referenced by jobs exist implicitly (no quota). A namespace's `used` defaults to
  the requests of its tasks that occupy nodes.
- Labels, node selectors and taint values are strings; YAML scalars (`true`, `1`) are converted.
- `sla_waiting_time` is a Go-style duration (`1h`, `30m`, `90s`, `1h30m`) or seconds; `created`
  and `now` are ISO-8601 (a timestamp without zone is UTC) or unix seconds.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler_core.framework.conf import DEFAULT_CONF, ConfError, SchedulerConf, parse_conf
from scheduler_core.framework.node_search import parse_options
from scheduler_core.framework.sharding import DEFAULT_SCHEDULER, MODES, NONE, Sharding, foreign_of
from scheduler_core.model import (
    OCCUPYING_STATUSES,
    ClusterSnapshot,
    NamespaceInfo,
    PriorityClassInfo,
)
from scheduler_core.resources import Resource
from scheduler_core.scenario_check import Expect, parse_expect
from scheduler_core.scenario_cluster import ClusterReader
from scheduler_core.scenario_fields import DEFAULT_EPOCH, Ctx, Obj, ScenarioError
from scheduler_core.yaml_lines import YamlLineError, load_yaml_lines

__all__ = ["DEFAULT_EPOCH", "Scenario", "ScenarioError", "load_scenario", "run_scenario"]

TOP_KEYS = ("config", "configurations", "options", "sharding", "now", "priority_classes", "namespaces",
            "nodes", "queues", "jobs", "expect")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass
class Scenario:
    """A loaded scenario: the cluster snapshot, the scheduler conf and the optional expectations."""

    snapshot: ClusterSnapshot
    conf: SchedulerConf
    expect: Expect | None
    source: str          # the file name used in messages
    parse_s: float = 0.0
    sharding: Sharding | None = None  # the `sharding:` key (framework.sharding), None when absent


class _DuplicateJsonKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateJsonKey(key)
        out[key] = value
    return out


def _read(path_or_text: str | os.PathLike[str], filename: str | None) -> tuple[str, str]:
    """(text, filename): a PathLike or an existing path is read; anything else is the text."""
    if isinstance(path_or_text, os.PathLike) or (
            filename is None and "\n" not in path_or_text and Path(path_or_text).is_file()):
        path = Path(path_or_text)
        try:
            return path.read_text(encoding="utf-8"), filename or str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(filename or str(path), None, f"cannot read file: {exc}") from None
    return str(path_or_text), filename or "<scenario>"


def _parse_document(text: str, filename: str) -> tuple[Any, Ctx]:
    """Load YAML (with lines) or JSON (lines recovered through the YAML loader on error)."""
    if filename.endswith(".json"):
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise ScenarioError(filename, exc.lineno, f"JSON syntax error: {exc.msg}") from None
        except _DuplicateJsonKey as exc:
            try:
                load_yaml_lines(text)
            except YamlLineError as yexc:
                raise ScenarioError(filename, yexc.line, yexc.message) from None
            raise ScenarioError(filename, None, f"duplicate key {exc.args[0]!r}") from None
        cache: list[Any] = []

        def line_root() -> Any:
            if not cache:  # JSON is (nearly) YAML: re-read with lines only when reporting an error
                try:
                    cache.append(load_yaml_lines(text))
                except YamlLineError:
                    cache.append(None)
            return cache[0]

        return data, Ctx(filename, line_root)
    try:
        data = load_yaml_lines(text)
    except YamlLineError as exc:
        raise ScenarioError(filename, exc.line, exc.message) from None
    return data, Ctx(filename, lambda: data)


def load_scenario(path_or_text: str | os.PathLike[str], *, filename: str | None = None) -> Scenario:
    """Read and validate a scenario; raise ScenarioError (file, line, message) on any problem.

    A `Path` (or a str naming an existing file, when no `filename` is given) is read; any other
    str is the scenario text. `filename` names it in messages; a `.json` name selects JSON.
    """
    start = time.perf_counter()
    text, filename = _read(path_or_text, filename)
    data, ctx = _parse_document(text, filename)
    if data is None:
        raise ScenarioError(filename, None, "empty scenario")
    top = Obj(ctx, data, (), TOP_KEYS)
    conf = _read_conf(ctx, top)
    priority_classes = _read_priority_classes(ctx, top)
    reader = ClusterReader(ctx, top, priority_classes)
    nodes = reader.nodes()
    queues = reader.queues()
    jobs = reader.jobs()
    created = [j.created for j in jobs]
    now = top.time("now")
    if now is None:
        now = (max(created) if created else DEFAULT_EPOCH) + 3600.0
    for node in nodes:
        if node.usage is not None:
            node.usage_time = now
    snapshot = ClusterSnapshot.build(
        nodes=nodes, queues=queues, jobs=jobs, priority_classes=priority_classes.values(), now=now)
    _add_namespaces(ctx, top, snapshot)
    sharding = _read_sharding(ctx, top, snapshot, reader.job_schedulers)
    expect = None
    if top.has("expect"):
        expect = parse_expect(ctx, top.data["expect"], ("expect",), snapshot)
    return Scenario(snapshot=snapshot, conf=conf, expect=expect, source=filename,
                    parse_s=time.perf_counter() - start, sharding=sharding)


def run_scenario(scenario: Scenario) -> Any:
    """Run one session on the scenario's snapshot; returns the SessionResult (timing filled)."""
    from scheduler_core.scheduler import run_session  # late: the scheduler imports every plugin

    start = time.perf_counter()
    result = run_session(scenario.snapshot, scenario.conf, sharding=scenario.sharding)
    result.timing.setdefault("session_s", round(time.perf_counter() - start, 6))
    result.timing["parse_s"] = round(scenario.parse_s, 6)
    return result


# -- config --------------------------------------------------------------------------------------

def _conf_problem_path(problem: str, config: dict[str, Any], cfg_path: tuple) -> tuple:
    """Best-effort key path of one ConfError problem, for its line number."""
    m = re.match(r"tiers\[(\d+)\](?:\.plugins)?(?:\[(\d+)\])?", problem)
    if m:
        path: tuple = (*cfg_path, "tiers", int(m.group(1)))
        if m.group(2) is not None:
            path = (*path, "plugins", int(m.group(2)))
            key = re.search(r"unknown key (\S+)$|: (\w+) must be", problem)
            if key:
                path = (*path, key.group(1) or key.group(2))
        return path
    names = re.match(r"unknown plugin\(s\): (.+)$|plugin (\S+) configured twice", problem)
    if names:
        wanted = (names.group(1) or "").split(", ")[0] or names.group(2)
        hits = []
        for ti, tier in enumerate(config.get("tiers") or []):
            plugins = tier.get("plugins") if isinstance(tier, dict) else None
            for pi, plugin in enumerate(plugins if isinstance(plugins, list) else []):
                if isinstance(plugin, dict) and plugin.get("name") == wanted:
                    hits.append((*cfg_path, "tiers", ti, "plugins", pi, "name"))
        if hits:
            return hits[-1] if names.group(2) else hits[0]
    if problem.startswith(("unknown action", "actions")):
        return (*cfg_path, "actions")
    m = re.match(r"configurations(?:\[(\d+)\])?", problem)
    if m:
        return ("configurations", int(m.group(1))) if m.group(1) else ("configurations",)
    m = re.match(r"options: (\S+) must", problem)
    if m:
        return (*cfg_path, m.group(1))
    m = re.match(r"unknown key\(s\): (\S+?)(,|$)", problem)
    if m:
        return (*cfg_path, m.group(1))
    return cfg_path


def _read_conf(ctx: Ctx, top: Obj) -> SchedulerConf:
    conf = _read_conf_block(ctx, top)
    raw = top.mapping("options")
    if not raw:
        return conf
    problems: list[str] = []
    for key, value in raw.items():
        parse_options({key: value}, "options", problems)
        if problems:
            raise ctx.error(("options", key), problems[0].removeprefix("options: "))
    return dataclasses.replace(conf, options=parse_options(raw, "options", problems, base=conf.options))


def _read_conf_block(ctx: Ctx, top: Obj) -> SchedulerConf:
    raw = top.mapping("config")
    if raw is None:
        if top.has("configurations"):
            raise top.err("configurations", "needs a config: block")
        return copy.deepcopy(DEFAULT_CONF)
    data = dict(raw)
    cfg_path: tuple = ("config",)
    if top.has("configurations"):
        if "configurations" in data:
            raise top.err("configurations", "given both at the top level and inside config:")
        data["configurations"] = top.data["configurations"]
    try:
        return parse_conf(data)
    except ConfError as exc:
        first = _conf_problem_path(exc.problems[0], data, cfg_path)
        if first[:1] == ("configurations",) and "configurations" not in raw:
            line_path: tuple = first
        elif first[:1] == ("configurations",):
            line_path = (*cfg_path, *first)
        else:
            line_path = first
        raise ctx.error(cfg_path, "; ".join(exc.problems), line_path=line_path) from None


def _read_sharding(ctx: Ctx, top: Obj, snapshot: ClusterSnapshot,
                   job_schedulers: dict[str, str]) -> Sharding | None:
    """The `sharding:` block: mode (default none), shard_name, nodes_in_shard (known, distinct
    node names), scheduler_name (default volcano) and schedulers (every shard's scheduler name;
    default [scheduler_name] unless that is volcano); None when the key is absent. The jobs
    another instance places (`job_schedulers`: uid -> the name a job gives) become foreign."""
    if not top.has("sharding"):  # the default instance, no shard: every job is its own
        return None
    o = Obj(ctx, top.data["sharding"], ("sharding",),
            ("mode", "shard_name", "nodes_in_shard", "scheduler_name", "schedulers"))
    mode = o.choice("mode", MODES, NONE)
    shard_name = o.text("shard_name", "")
    names: list[str] = []
    for path, name in o.items("nodes_in_shard"):
        if not isinstance(name, str) or not name:
            raise ctx.error(path, f"expected a node name, got {name!r}")
        if name not in snapshot.nodes:
            raise ctx.error(path, f"unknown node {name!r}")
        if name in names:
            raise ctx.error(path, f"node {name!r} listed twice")
        names.append(name)
    ours = o.text("scheduler_name", DEFAULT_SCHEDULER)
    if not ours:
        raise o.err("scheduler_name", "expected a non-empty scheduler name")
    schedulers: list[str] = [] if ours == DEFAULT_SCHEDULER else [ours]
    if o.has("schedulers"):
        schedulers = []
        for path, name in o.items("schedulers"):
            if not isinstance(name, str) or not name:
                raise ctx.error(path, f"expected a scheduler name, got {name!r}")
            schedulers.append(name)
    foreign = foreign_of({uid: job_schedulers.get(uid, DEFAULT_SCHEDULER) for uid in snapshot.jobs},
                         ours, schedulers)
    return Sharding(mode, shard_name, frozenset(names), ours if o.has("scheduler_name") else "", foreign)


def _read_priority_classes(ctx: Ctx, top: Obj) -> dict[str, PriorityClassInfo]:
    out: dict[str, PriorityClassInfo] = {}
    for name, value in (top.mapping("priority_classes") or {}).items():
        path = ("priority_classes", name)
        if isinstance(value, dict):
            o = Obj(ctx, value, path, ("value", "preemption_policy"), required=("value",))
            out[name] = PriorityClassInfo(
                name=str(name), value=o.integer("value", 0),
                preemption_policy=o.choice("preemption_policy", PREEMPTION_POLICIES, "PreemptLowerPriority"))
        elif isinstance(value, int) and not isinstance(value, bool):
            out[name] = PriorityClassInfo(name=str(name), value=value)
        else:
            raise ctx.error(path, f"expected an integer or {{value, preemption_policy}}, got {value!r}")
    return out


def _add_namespaces(ctx: Ctx, top: Obj, snapshot: ClusterSnapshot) -> None:
    """Listed namespaces (quota, used) plus every namespace a job uses; `used` defaults to tasks."""
    computed: dict[str, Resource] = {}
    for job in snapshot.jobs.values():
        used = computed.setdefault(job.namespace, Resource.empty())
        for task in job.tasks.values():
            if task.status in OCCUPYING_STATUSES:
                used.add(task.resreq)
    seen: set[str] = set()
    for path, item in top.items("namespaces"):
        o = Obj(ctx, item, path, ("name", "quota", "used"), required=("name",))
        name = o.text("name")
        if name in seen:
            raise o.err("name", f"duplicate namespace {name!r}")
        seen.add(name)
        used = o.resource("used")
        snapshot.namespaces[name] = NamespaceInfo(
            name=name, quota=o.resource("quota"),
            used=used if used is not None else computed.get(name, Resource.empty()))
    for name, used in sorted(computed.items()):
        if name not in snapshot.namespaces:
            snapshot.namespaces[name] = NamespaceInfo(name=name, used=used)

