"""The one validator of Kubernetes shapes: API, UI (through the services), manifest import and the
scenario loader all call it, and the scheduler screens stored tasks with `task_shape_problem`.

Every check takes the value and its path (`tasks[0].affinity`) and returns the value (None-able
fields normalised: affinity None, lists [], maps {}), or raises `ShapeError(path, message)` whose
path names the exact element (`...nodeSelectorTerms[0].matchExpressions[1].values`). Unknown keys
are errors. Checks follow Kubernetes' own validation (apimachinery `ValidateLabelSelector`,
core `ValidateNodeSelectorRequirement`, `ValidateTolerations`, `validateTopologySpreadConstraints`).

Bounds (each a module constant; the text, nesting and duration checks live in shapes_base and
are re-exported here):
- `MAX_DEPTH` = 32: nesting of any free-form JSON value (annotations); `check_depth` walks
  iteratively, so a 100,000-level value is refused without recursion. The Kubernetes shapes
  themselves nest at most 9 levels (affinity > podAffinity > preferred[] > podAffinityTerm >
  labelSelector > matchExpressions[] > values[]), and unknown keys are refused at each level.
- `MAX_ITEMS` = 1,000 elements in any list of a shape (terms, expressions, values, tolerations,
  constraints) and keys in a label map or node selector.
- Label and selector keys: Kubernetes qualified names, an optional DNS-subdomain prefix of at
  most `MAX_PREFIX` = 253 characters, then a name of at most `MAX_NAME` = 63 characters
  (`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`). Label values: at most `MAX_LABEL_VALUE` = 63
  characters of the same alphabet, or empty. Resource names are qualified names too.
- Toleration `tolerationSeconds` and `maxSkew`: int64 (`MAX_INT64`), `minDomains` int32;
  preferred term weights 1..100; Gt/Lt take exactly one value that parses as an int64.
- Free text (`check_text`): at most `MAX_TEXT` = 65,536 characters; no NUL, no other C0/C1
  control character (tab and newline only where a field allows multi-line text), no unpaired
  surrogate (PostgreSQL cannot store NUL, UTF-8 cannot encode a lone surrogate).
- Durations (`duration`, `sla_waiting_time`): finite, non-negative, at most
  `MAX_DURATION_SECONDS` = 366 days.
- Quantities (checked by `scheduler_core.resources`): finite and at most 2^63-1 in stored units.
- Object names (`shapes_names`): DNS-1123 subdomains (253), labels (63) where Kubernetes keeps
  labels, pod names of at most 63; node taints (`shapes_taints`): unique by key and effect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from scheduler_core.shapes_base import (
    MAX_DEPTH,
    MAX_DURATION_SECONDS,
    MAX_INT64,
    MAX_TEXT,
    ShapeError,
    check_depth,
    check_duration,
    check_json_text,
    check_text,
    join,
)
from scheduler_core.shapes_base import type_name as _type
from scheduler_core.shapes_names import (
    MAX_LABEL,
    MAX_LABEL_VALUE,
    MAX_NAME,
    MAX_POD_NAME,
    MAX_PREFIX,
    MAX_SUBDOMAIN,
    check_label_key,
    check_label_name,
    check_label_value,
    check_pod_name,
    check_subdomain_name,
    pod_name,
)
from scheduler_core.shapes_taints import check_taints

__all__ = [
    "MAX_DEPTH", "MAX_DURATION_SECONDS", "MAX_INT64", "MAX_ITEMS", "MAX_LABEL", "MAX_LABEL_VALUE",
    "MAX_NAME", "MAX_POD_NAME", "MAX_PREFIX", "MAX_SUBDOMAIN", "MAX_TEXT", "ShapeError", "check_affinity",
    "check_depth", "check_duration", "check_json_text", "check_label_key", "check_label_name",
    "check_label_value", "check_labels", "check_node_selector", "check_pod_name", "check_resource_name",
    "check_subdomain_name", "check_taints", "check_text", "check_tolerations",
    "check_topology_spread_constraints", "join", "pod_name", "task_shape_problem",
]

MAX_ITEMS = 1000

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_INT = re.compile(r"[+-]?[0-9]{1,19}")

NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


# -- names and values ----------------------------------------------------------------------------

def check_resource_name(name: Any, path: str) -> str:
    """A resource name (`cpu`, `memory`, `pods`, `nvidia.com/gpu`): a Kubernetes qualified name."""
    return check_label_key(name, path)


def _map(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise ShapeError(path, "expected a mapping")
    return value


def _list(value: Any, path: str, *, non_empty: bool = False) -> list:
    if not isinstance(value, list):
        raise ShapeError(path, "expected a list")
    if len(value) > MAX_ITEMS:
        raise ShapeError(path, f"more than {MAX_ITEMS} items")
    if non_empty and not value:
        raise ShapeError(path, "must not be empty")
    return value


def _keys(value: dict, path: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
    for key in value:
        if key not in allowed:
            check_text(key, path, max_length=MAX_PREFIX)  # the path must not carry what it refuses
            raise ShapeError(join(path, key), f"unknown key (allowed: {', '.join(allowed)})")
    for key in required:
        if value.get(key) is None:
            raise ShapeError(join(path, key), "required")
    return value


def _string_map(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    _map(value, path)
    if len(value) > MAX_ITEMS:
        raise ShapeError(path, f"more than {MAX_ITEMS} keys")
    for key, val in value.items():
        check_label_key(key, path)  # a bad key is reported on the map: the path must stay clean
        check_label_value(val, join(path, key))
    return value


def check_labels(value: Any, path: str) -> dict[str, str]:
    """Pod or node labels: qualified-name keys to label values (None = {})."""
    return _string_map(value, path)


def check_node_selector(value: Any, path: str) -> dict[str, str]:
    """A pod's nodeSelector: the same shape as labels (None = {})."""
    return _string_map(value, path)


def _int(value: Any, path: str, low: int, high: int = MAX_INT64) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(path, f"expected an integer, got {_type(value)}")
    if not low <= value <= high:
        raise ShapeError(path, f"must be between {low} and {high}, got {value}")
    return value


def _choice(value: Any, path: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        shown = value if isinstance(value, str | int | float | None) else _type(value)
        raise ShapeError(path, f"{shown!r} is not one of {', '.join(allowed)}")
    return value


# -- selectors -----------------------------------------------------------------------------------

def _string_values(values: Any, path: str, check: Callable[[Any, str], Any]) -> list:
    for i, v in enumerate(_list(values, path)):
        check(v, join(path, i))
    return values


def _requirement(expr: Any, path: str, operators: tuple[str, ...]) -> None:
    """One matchExpressions entry: key, operator and values consistent with the operator."""
    _keys(_map(expr, path), path, ("key", "operator", "values"), ("key", "operator"))
    check_label_key(expr["key"], join(path, "key"))
    op = _choice(expr["operator"], join(path, "operator"), operators)
    vpath = join(path, "values")
    values = expr.get("values")
    values = [] if values is None else _string_values(
        values, vpath, check_label_value if operators is LABEL_OPERATORS else _selector_value)
    if op in ("In", "NotIn") and not values:
        raise ShapeError(vpath, f"must be specified when operator is {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise ShapeError(vpath, f"may not be specified when operator is {op}")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise ShapeError(vpath, f"must be a single value when operator is {op}")
        if not _INT.fullmatch(values[0]) or not -MAX_INT64 - 1 <= int(values[0]) <= MAX_INT64:
            raise ShapeError(join(vpath, 0), f"{values[0]!r} is not an integer")


def _selector_value(value: Any, path: str) -> str:
    # Node selector requirement values are not label-value checked by Kubernetes; keep them
    # plain, bounded, printable strings.
    return check_text(value, path, max_length=MAX_PREFIX)


def _field_requirement(expr: Any, path: str) -> None:
    """One matchFields entry: Kubernetes supports `metadata.name` with In/NotIn and one value."""
    _keys(_map(expr, path), path, ("key", "operator", "values"), ("key", "operator"))
    if expr["key"] != "metadata.name":
        raise ShapeError(join(path, "key"), "not a valid field selector key (only metadata.name)")
    op = _choice(expr["operator"], join(path, "operator"), ("In", "NotIn"))
    values = _string_values(expr.get("values") or [], join(path, "values"), _selector_value)
    if len(values) != 1:
        raise ShapeError(join(path, "values"), f"must be a single value when operator is {op}")


def _node_selector_term(term: Any, path: str) -> None:
    _keys(_map(term, path), path, ("matchExpressions", "matchFields"))
    for key, check in (("matchExpressions", None), ("matchFields", _field_requirement)):
        if term.get(key) is None:
            continue
        for i, expr in enumerate(_list(term[key], join(path, key))):
            where = join(join(path, key), i)
            if check is None:
                _requirement(expr, where, NODE_OPERATORS)
            else:
                check(expr, where)


def check_label_selector(value: Any, path: str) -> dict | None:
    """A LabelSelector {matchLabels, matchExpressions} (None stays None)."""
    if value is None:
        return None
    _keys(_map(value, path), path, ("matchLabels", "matchExpressions"))
    _string_map(value.get("matchLabels"), join(path, "matchLabels"))
    exprs = value.get("matchExpressions")
    if exprs is not None:
        for i, expr in enumerate(_list(exprs, join(path, "matchExpressions"))):
            _requirement(expr, join(join(path, "matchExpressions"), i), LABEL_OPERATORS)
    return value


def _weighted_terms(items: Any, path: str, term_key: str, check_term: Callable[[Any, str], Any]) -> None:
    """A `preferred...` list: items {weight: 1-100, <term_key>: a term `check_term` checks}."""
    for i, item in enumerate(_list(items, path)):
        where = join(path, i)
        _keys(_map(item, where), where, ("weight", term_key), ("weight", term_key))
        _int(item["weight"], join(where, "weight"), 1, 100)
        check_term(item[term_key], join(where, term_key))


def _node_affinity(value: Any, path: str) -> None:
    req_key, pref_key = REQUIRED, PREFERRED
    _keys(_map(value, path), path, (req_key, pref_key))
    if value.get(req_key) is not None:
        rpath = join(path, req_key)
        _keys(_map(value[req_key], rpath), rpath, ("nodeSelectorTerms",), ("nodeSelectorTerms",))
        tpath = join(rpath, "nodeSelectorTerms")
        for i, term in enumerate(_list(value[req_key]["nodeSelectorTerms"], tpath, non_empty=True)):
            _node_selector_term(term, join(tpath, i))
    if value.get(pref_key) is not None:
        _weighted_terms(value[pref_key], join(path, pref_key), "preference", _node_selector_term)


def _pod_affinity_term(term: Any, path: str) -> None:
    _keys(_map(term, path), path, ("labelSelector", "namespaces", "topologyKey"), ("topologyKey",))
    check_label_selector(term.get("labelSelector"), join(path, "labelSelector"))
    if term.get("namespaces") is not None:
        npath = join(path, "namespaces")
        for i, ns in enumerate(_list(term["namespaces"], npath)):
            if not isinstance(ns, str) or len(ns) > MAX_NAME or not _DNS_LABEL.fullmatch(ns):
                check_text(ns, join(npath, i))
                raise ShapeError(join(npath, i), f"{ns!r} is not a namespace (a DNS label)")
    key = term["topologyKey"]
    if key == "":
        raise ShapeError(join(path, "topologyKey"), "must not be empty")
    check_label_key(key, join(path, "topologyKey"))


def _pod_affinity(value: Any, path: str) -> None:
    req_key, pref_key = REQUIRED, PREFERRED
    _keys(_map(value, path), path, (req_key, pref_key))
    if value.get(req_key) is not None:
        rpath = join(path, req_key)
        for i, term in enumerate(_list(value[req_key], rpath)):
            _pod_affinity_term(term, join(rpath, i))
    if value.get(pref_key) is not None:
        _weighted_terms(value[pref_key], join(path, pref_key), "podAffinityTerm", _pod_affinity_term)


def check_affinity(value: Any, path: str) -> dict | None:
    """A pod's Affinity {nodeAffinity, podAffinity, podAntiAffinity}; None (or {}) means none."""
    if value is None:
        return None
    _keys(_map(value, path), path, ("nodeAffinity", "podAffinity", "podAntiAffinity"))
    if value.get("nodeAffinity") is not None:
        _node_affinity(value["nodeAffinity"], join(path, "nodeAffinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        if value.get(kind) is not None:
            _pod_affinity(value[kind], join(path, kind))
    return value


# -- tolerations and spread ----------------------------------------------------------------------

def check_tolerations(value: Any, path: str) -> list:
    """A pod's tolerations: [{key, operator Equal|Exists, value, effect, tolerationSeconds}]."""
    if value is None:
        return []
    for i, tol in enumerate(_list(value, path)):
        where = join(path, i)
        _keys(_map(tol, where), where, ("key", "operator", "value", "effect", "tolerationSeconds"))
        key = tol.get("key") or ""
        if key:
            check_label_key(key, join(where, "key"))
        elif tol.get("key") is not None and not isinstance(tol["key"], str):
            raise ShapeError(join(where, "key"), f"expected a string, got {_type(tol['key'])}")
        op = _choice(tol.get("operator") or "Equal", join(where, "operator"), TOLERATION_OPERATORS)
        if not key and op != "Exists":
            raise ShapeError(join(where, "operator"), "must be Exists when key is empty")
        val = tol.get("value")
        if val is not None:
            check_label_value(val, join(where, "value"))
        if op == "Exists" and val:
            raise ShapeError(join(where, "value"), "must be empty when operator is Exists")
        effect = tol.get("effect") or ""
        if effect:
            _choice(effect, join(where, "effect"), TAINT_EFFECTS)
        elif tol.get("effect") is not None and not isinstance(tol["effect"], str):
            raise ShapeError(join(where, "effect"), f"expected a string, got {_type(tol['effect'])}")
        if tol.get("tolerationSeconds") is not None:
            _int(tol["tolerationSeconds"], join(where, "tolerationSeconds"), -MAX_INT64 - 1)
            if effect != "NoExecute":
                raise ShapeError(join(where, "effect"), "must be NoExecute when tolerationSeconds is set")
    return value


SPREAD_KEYS = ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
               "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys")


def check_topology_spread_constraints(value: Any, path: str) -> list:
    """A pod's topologySpreadConstraints, as Kubernetes validates them (None = [])."""
    if value is None:
        return []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(_list(value, path)):
        where = join(path, i)
        _keys(_map(c, where), where, SPREAD_KEYS, ("maxSkew", "topologyKey", "whenUnsatisfiable"))
        _int(c["maxSkew"], join(where, "maxSkew"), 1)
        if c["topologyKey"] == "":
            raise ShapeError(join(where, "topologyKey"), "must not be empty")
        check_label_key(c["topologyKey"], join(where, "topologyKey"))
        when = _choice(c["whenUnsatisfiable"], join(where, "whenUnsatisfiable"), UNSATISFIABLE)
        if (c["topologyKey"], when) in seen:
            raise ShapeError(where, f"duplicate constraint for topologyKey {c['topologyKey']!r} and "
                                    f"whenUnsatisfiable {when}")
        seen.add((c["topologyKey"], when))
        selector = check_label_selector(c.get("labelSelector"), join(where, "labelSelector"))
        if c.get("minDomains") is not None:
            _int(c["minDomains"], join(where, "minDomains"), 1, 2**31 - 1)
            if when != "DoNotSchedule":
                raise ShapeError(join(where, "minDomains"), "may only be set when whenUnsatisfiable is "
                                                            "DoNotSchedule")
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(key) is not None:
                _choice(c[key], join(where, key), INCLUSION_POLICIES)
        if c.get("matchLabelKeys") is not None:
            kpath = join(where, "matchLabelKeys")
            selected = {e.get("key") for e in (selector or {}).get("matchExpressions") or []}
            selected |= set((selector or {}).get("matchLabels") or {})
            for j, key in enumerate(_list(c["matchLabelKeys"], kpath)):
                check_label_key(key, join(kpath, j))
                if key in selected:
                    raise ShapeError(join(kpath, j), f"{key!r} exists in both matchLabelKeys and "
                                                     "labelSelector")
    return value


# -- scheduler screening -------------------------------------------------------------------------

def task_shape_problem(task: Any, prefix: str = "") -> ShapeError | None:
    """The first shape problem of a `scheduler_core.model.TaskInfo` (paths start at the field,
    under `prefix`), or None. Checks affinity, tolerations, node selector, labels, topology
    spread constraints, request resource names and amounts, and duration."""
    try:
        check_affinity(task.affinity, join(prefix, "affinity"))
        check_tolerations(task.tolerations, join(prefix, "tolerations"))
        check_node_selector(task.node_selector, join(prefix, "node_selector"))
        check_labels(task.labels, join(prefix, "labels"))
        check_topology_spread_constraints(task.topology_spread_constraints,
                                          join(prefix, "topology_spread_constraints"))
        request = task.resreq
        rpath = join(prefix, "request")
        amounts = (("cpu", request.milli_cpu), ("memory", request.memory), *request.scalars.items())
        for name, amount in amounts:
            if name not in ("cpu", "memory"):
                check_resource_name(name, join(rpath, name))
            if not math.isfinite(amount) or not 0 <= amount <= MAX_INT64:
                raise ShapeError(join(rpath, name), f"{amount!r} is not a quantity between 0 and "
                                                    f"{MAX_INT64} stored units")
        check_duration(task.duration, join(prefix, "duration"))
    except ShapeError as exc:
        return exc
    return None
