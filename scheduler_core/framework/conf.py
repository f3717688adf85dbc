"""Scheduler configuration: Volcano's `volcano-scheduler.conf` shape, parsed and checked.

```yaml
actions: "enqueue, allocate, backfill"     # comma string or list
tiers:
  - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false          # per-extension-point switch (absent = enabled)
configurations:                           # list of {name, arguments} (or a mapping)
  - {name: preempt, arguments: {...}}
minimum-feasible-nodes: 100               # scheduler-level options (Volcano's command-line
minimum-percentage-nodes-to-find: 5       # flags; framework.node_search): optional top-level
percentage-nodes-to-find: 0               # keys, dashes or underscores
```
Switch spellings: Volcano's YAML keys (`enableJobOrder`) and Go field names (`enabledJobOrder`)
are both accepted and stored under the canonical names of the semantics page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from scheduler_core.framework.node_search import OPTION_DEFAULTS, SearchOptions, parse_options

KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim")
KNOWN_PLUGINS = ("gang", "priority", "conformance", "drf", "predicates", "nodeorder", "binpack",
                 "proportion", "capacity", "overcommit", "resourcequota", "sla", "usage",
                 "rescheduling")

# Canonical switch names (docs/semantics.md section 3).
FLAGS = ("enabledJobOrder", "enabledNamespaceOrder", "enabledJobReady", "enabledJobPipelined",
         "enabledTaskOrder", "enabledPreemptable", "enabledReclaimable", "enablePreemptive",
         "enabledQueueOrder", "enabledPredicate", "enabledBestNode", "enabledNodeOrder",
         "enabledJobEnqueued", "enabledVictim", "enabledJobStarving", "enabledOverused",
         "enabledAllocatable", "enableHierarchy", "enabledTargetJob", "enabledReservedNodes")
# Switches that are off when absent.
OFF_BY_DEFAULT = frozenset({"enableHierarchy"})


def _stem(flag: str) -> str:
    return flag.removeprefix("enabled").removeprefix("enable")


_FLAG_ALIASES: dict[str, str] = {}
for _f in FLAGS:
    _FLAG_ALIASES["enable" + _stem(_f)] = _f
    _FLAG_ALIASES["enabled" + _stem(_f)] = _f


def canonical_flag(name: str) -> str | None:
    """Canonical switch name for any accepted spelling, or None if unknown."""
    return _FLAG_ALIASES.get(name)


class ConfError(ValueError):
    """A configuration problem; `problems` lists every one found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class PluginOption:
    """One plugin in a tier: its name, arguments and extension-point switches."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)

    def enabled(self, flag: str) -> bool:
        """Whether a switch is on; absent = on, except enableHierarchy (absent = off)."""
        canon = canonical_flag(flag) or flag
        if canon in self.flags:
            return self.flags[canon]
        return canon not in OFF_BY_DEFAULT


@dataclass
class Tier:
    """An ordered group of plugins; earlier tiers take precedence."""

    plugins: list[PluginOption] = field(default_factory=list)


@dataclass
class SchedulerConf:
    """Actions in order, tiers of plugins, per-action arguments."""

    actions: list[str] = field(default_factory=list)
    tiers: list[Tier] = field(default_factory=list)
    configurations: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Scheduler-level options (the feasible-node search limit), Volcano's defaults.
    options: SearchOptions = field(default_factory=SearchOptions)

    def plugin(self, name: str) -> PluginOption | None:
        """The option of a configured plugin, or None."""
        for tier in self.tiers:
            for p in tier.plugins:
                if p.name == name:
                    return p
        return None

    def to_dict(self) -> dict[str, Any]:
        """The YAML-ready shape (Volcano's keys)."""
        tiers = []
        for tier in self.tiers:
            plugins = []
            for p in tier.plugins:
                d: dict[str, Any] = {"name": p.name}
                d.update(p.flags)
                if p.arguments:
                    d["arguments"] = dict(p.arguments)
                plugins.append(d)
            tiers.append({"plugins": plugins})
        out: dict[str, Any] = {"actions": ", ".join(self.actions), "tiers": tiers}
        if self.configurations:
            out["configurations"] = [{"name": k, "arguments": v} for k, v in self.configurations.items()]
        out.update(self.options.to_dict())
        return out


def _known_plugins() -> set[str]:
    # Registered plugins count too, so a new plugin needs no edit here (only the factory list).
    from scheduler_core.framework.registry import load_all, plugin_builders

    load_all()
    return set(KNOWN_PLUGINS) | set(plugin_builders)


def _known_actions() -> set[str]:
    from scheduler_core.framework.registry import action_builders, load_all

    load_all()
    return set(KNOWN_ACTIONS) | set(action_builders)


def _parse_actions(raw: Any, problems: list[str]) -> list[str]:
    if isinstance(raw, str):
        names = [a.strip() for a in raw.split(",") if a.strip()]
    elif isinstance(raw, list) and all(isinstance(a, str) for a in raw):
        names = [a.strip() for a in raw]
    else:
        problems.append("actions: expected a comma-separated string or a list of names")
        return []
    if not names:
        problems.append("actions: no action configured")
    known = _known_actions()
    unknown = [a for a in names if a not in known]
    if unknown:
        problems.append(f"unknown action(s): {', '.join(unknown)}")
    return names


def _parse_plugin(raw: Any, where: str, problems: list[str]) -> PluginOption | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping with a name")
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: missing plugin name")
        return None
    opt = PluginOption(name=name)
    for key, value in raw.items():
        if key == "name":
            continue
        if key == "arguments":
            if value is None:
                continue
            if not isinstance(value, dict):
                problems.append(f"{where} ({name}): arguments must be a mapping")
            else:
                opt.arguments = dict(value)
            continue
        canon = canonical_flag(key)
        if canon is None:
            problems.append(f"{where} ({name}): unknown key {key}")
        elif not isinstance(value, bool):
            problems.append(f"{where} ({name}): {key} must be true or false")
        else:
            opt.flags[canon] = value
    return opt


def _parse_configurations(raw: Any, problems: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if raw is None:
        return out
    items: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        for i, entry in enumerate(raw):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                problems.append(f"configurations[{i}]: expected {{name, arguments}}")
                continue
            extra = set(entry) - {"name", "arguments"}
            if extra:
                problems.append(f"configurations[{i}]: unknown key(s) {', '.join(sorted(map(str, extra)))}")
            items.append((entry["name"], entry.get("arguments")))
    else:
        problems.append("configurations: expected a list of {name, arguments}")
        return out
    known = _known_actions()
    for name, args in items:
        if name not in known:
            problems.append(f"configurations: unknown action {name}")
        if args is not None and not isinstance(args, dict):
            problems.append(f"configurations ({name}): arguments must be a mapping")
            continue
        out[name] = dict(args or {})
    return out


def _check_arguments(tiers: list[Tier], configurations: dict[str, dict[str, Any]],
                     problems: list[str]) -> None:
    """Arguments whose bad values would change scheduling silently: named, not guessed (each
    registered plugin checks its own, `Plugin.check_arguments`)."""
    from scheduler_core.framework.registry import load_all, plugin_builders

    load_all()
    for tier in tiers:
        for opt in tier.plugins:
            check = getattr(plugin_builders.get(opt.name), "check_arguments", None)
            if check is not None:
                problems.extend(f"plugin {opt.name}: {problem}" for problem in check(opt.arguments))
    # Action arguments are never refused: like Volcano, the actions ignore a value of the wrong
    # type (keeping the default) and say so in the session's warnings.


def parse_conf(source: str | dict[str, Any]) -> SchedulerConf:
    """Parse YAML text or an already-loaded mapping; raise ConfError listing every problem."""
    if isinstance(source, str):
        try:
            data = yaml.safe_load(source)
        except yaml.YAMLError as exc:
            raise ConfError([f"invalid YAML: {exc}"]) from exc
    else:
        data = source
    if not isinstance(data, dict):
        raise ConfError(["configuration must be a mapping with actions and tiers"])
    problems: list[str] = []
    option_keys = {k for k in data if str(k).replace("_", "-") in OPTION_DEFAULTS}
    extra = set(data) - {"actions", "tiers", "configurations"} - option_keys
    if extra:
        problems.append(f"unknown key(s): {', '.join(sorted(map(str, extra)))}")  # YAML keys may be null/int
    if "actions" not in data:
        problems.append("actions: missing")
        actions: list[str] = []
    else:
        actions = _parse_actions(data["actions"], problems)
    tiers: list[Tier] = []
    raw_tiers = data.get("tiers") or []
    if not isinstance(raw_tiers, list):
        problems.append("tiers: expected a list")
        raw_tiers = []
    seen: set[str] = set()
    known = _known_plugins()
    unknown: list[str] = []
    for ti, raw_tier in enumerate(raw_tiers):
        if not isinstance(raw_tier, dict):
            problems.append(f"tiers[{ti}]: expected a mapping with plugins")
            continue
        extra = set(raw_tier) - {"plugins"}
        if extra:
            problems.append(f"tiers[{ti}]: unknown key(s) {', '.join(sorted(extra))}")
        raw_plugins = raw_tier.get("plugins") or []
        if not isinstance(raw_plugins, list):
            problems.append(f"tiers[{ti}].plugins: expected a list")
            continue
        tier = Tier()
        for pi, raw_plugin in enumerate(raw_plugins):
            opt = _parse_plugin(raw_plugin, f"tiers[{ti}].plugins[{pi}]", problems)
            if opt is None:
                continue
            if opt.name not in known:
                unknown.append(opt.name)
            if opt.name in seen:
                problems.append(f"plugin {opt.name} configured twice")
            seen.add(opt.name)
            tier.plugins.append(opt)
        tiers.append(tier)
    if unknown:
        problems.append(f"unknown plugin(s): {', '.join(unknown)}")
    configurations = _parse_configurations(data.get("configurations"), problems)
    _check_arguments(tiers, configurations, problems)
    options = parse_options({k: data[k] for k in option_keys}, "options", problems)
    if problems:
        raise ConfError(problems)
    return SchedulerConf(actions=actions, tiers=tiers, configurations=configurations, options=options)


DEFAULT_CONF_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
  - plugins:
      - name: priority
      - name: gang
      - name: conformance
  - plugins:
      - name: overcommit
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
      - name: binpack
"""

DEFAULT_CONF: SchedulerConf = parse_conf(DEFAULT_CONF_YAML)
