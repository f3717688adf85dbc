"""The queue plugin's explanation JSON (scheduler_core proportion / capacity) in plain words.

Every sentence is generated from the numbers it states and says only what they show: a queue's
request is "met" only when it is at most its deserved on every resource (the explanation's
`unmet` list for proportion; the cycle's request against its deserved otherwise), and a clamp is
named only on the resources where the figures differ. Amounts come in output units (cores, bytes,
units) and are shown in human units (schedweb.dashboard.units).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schedweb.dashboard.units import dim_label, fmt, fmt_map, output_map_to_stored

# Words for a proportion round's one-word clamp (scheduler_core.plugins.proportion.deserved).
_CLAMP_WORDS = {
    "request": "capped at what the queue asks for",
    "real capability": "capped at its real capability (its hard limit, or what its parents leave it)",
    "guarantee": "raised to its guarantee, which is always reserved for it",
}
NO_CLAMP = "not capped: it keeps its weighted part"
EPSILON = 1.0  # stored units: below this a difference is rounding


def words(quantities: Mapping[str, float] | None) -> str:
    """`12 cores, 64 GiB of memory, 4 GPUs` for an explanation's resource object (output units)."""
    return fmt_map(output_map_to_stored(quantities))


def _any(quantities: Mapping[str, float] | None) -> bool:
    """True when some amount is above zero (an all-zero guarantee means none)."""
    return any(float(v) > 0 for v in (quantities or {}).values())


def _names(dims: list[str]) -> str:
    labels = [dim_label(d) if d not in ("cpu", "memory") else d for d in dims]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def unmet_dims(request: Mapping[str, float] | None, deserved: Mapping[str, float] | None) -> list[str]:
    """Resources (stored units in) on which the request is above the deserved."""
    if not request:
        return []
    have = deserved or {}
    return [d for d, v in sorted(request.items())
            if d != "pods" and float(v) > float(have.get(d, 0.0)) + EPSILON]


def request_sentence(name: str, request: Mapping[str, float] | None, deserved: Mapping[str, float] | None,
                     unmet: list[str]) -> str:
    """`Its whole request is met` only when `unmet` is empty; else each short resource with both figures
    (stored units in)."""
    if not unmet:
        return f"Its deserved covers its whole request ({fmt_map(request or {})})."
    parts = [f"{_names([d])}: asks {fmt(d, (request or {}).get(d, 0.0))}, deserves "
             f"{fmt(d, (deserved or {}).get(d, 0.0))}" for d in unmet]
    return f"Queue {name} asks for more than it deserves on {_names(unmet)} (" + "; ".join(parts) + ")."


@dataclass
class Explanation:
    """Sentences for the queue page, and the rounds as table rows (proportion only)."""

    plugin: str
    sentences: list[str]
    rounds: list[dict[str, Any]]
    more_rounds: int


def explain(data: Mapping[str, Any] | None, queue_name: str,
            request: Mapping[str, float] | None = None) -> Explanation | None:
    """Plain-language story of how the queue's deserved share was computed (None: no cycle yet).

    `request` is the cycle's request of the queue in stored units (capacity's explanation has none).
    """
    if not data:
        return None
    plugin = str(data.get("plugin", ""))
    if plugin == "proportion":
        return _proportion(data, queue_name)
    if plugin == "capacity":
        return _capacity(data, queue_name, request)
    if plugin == "rollup":
        kids = ", ".join(data.get("children") or [])
        return Explanation(plugin, [
            f"The active configuration computes no share for parent queue {queue_name}: its figures are the "
            f"sums of its children's ({kids})."], [], 0)
    return Explanation(plugin, [f"The {plugin or 'queue'} plugin computed this queue's share."], [], 0)


def _proportion(data: Mapping[str, Any], name: str) -> Explanation:
    sentences = [
        f"The proportion plugin shares the cluster ({words(data.get('cluster_total'))}) among the queues "
        "that have work, in proportion to their weights, round after round: a queue that gets all it "
        "asks for drops out and what it leaves is shared again among the others.",
        f"Queue {name} has weight {data.get('weight')} and asks for {words(data.get('request'))}.",
    ]
    if _any(data.get("guarantee")):
        sentences.append(f"It is guaranteed {words(data.get('guarantee'))} whatever the others need.")
    if _any(data.get("capability")):
        sentences.append(f"It may never use more than its capability, {words(data.get('capability'))}.")
    rounds = []
    for r in data.get("rounds") or []:
        clamp = r.get("clamp", "none")
        rounds.append({
            "round": r.get("round"), "remaining": words(r.get("remaining")),
            "total_weight": r.get("total_weight"), "weight": r.get("weight"),
            "deserved": words(r.get("deserved")), "clamp": _CLAMP_WORDS.get(clamp, NO_CLAMP),
            "met": bool(r.get("met")),
        })
    if rounds:
        last = rounds[-1]
        sentences.append(
            f"It took part in {data.get('rounds_total', len(rounds))} of {data.get('algorithm_rounds')} "
            f"rounds. In the last one, {last['remaining']} was still unshared among queues of total weight "
            f"{last['total_weight']}; its weight {last['weight']} brought its deserved to "
            f"{last['deserved']}, {last['clamp']}.")
    request = output_map_to_stored(data.get("request"))
    deserved = output_map_to_stored(data.get("deserved"))
    unmet = data.get("unmet")
    unmet = sorted(unmet) if isinstance(unmet, list) else unmet_dims(request, deserved)
    sentences.append(request_sentence(name, request, deserved, unmet))
    sentences.append(f"Result: queue {name} deserves {words(data.get('deserved'))}.")
    more = max(0, int(data.get("rounds_total") or 0) - len(rounds))
    return Explanation("proportion", sentences, rounds, more)


def _differ(a: Mapping[str, float] | None, b: Mapping[str, float] | None, lower: bool) -> list[str]:
    """Dims (output units in) where b is below a (lower=True) or above a (lower=False)."""
    first, second = output_map_to_stored(a) or {}, output_map_to_stored(b) or {}
    out = []
    for dim in sorted(set(first) | set(second)):
        x, y = first.get(dim, 0.0), second.get(dim, 0.0)
        if (y < x - EPSILON) if lower else (y > x + EPSILON):
            out.append(dim)
    return out


def _subset(quantities: Mapping[str, float] | None, dims: list[str]) -> str:
    return words({d: v for d, v in (quantities or {}).items() if d in dims})


def _capacity(data: Mapping[str, Any], name: str, request: Mapping[str, float] | None) -> Explanation:
    if data.get("best_effort"):
        return Explanation("capacity", [
            f"Queue {name} has no deserved resources: it runs only on what other queues leave free, "
            "and its tasks are the first to be reclaimed."], [], 0)
    spec = data.get("spec_deserved")
    sentences = [f"The capacity plugin starts from the deserved configured for queue {name}: {words(spec)}."]
    parent = data.get("parent")
    if parent and parent.get("queue") != "root":
        sentences.append(f"It sits under {parent.get('queue')}, which deserves "
                         f"{words(parent.get('deserved'))}.")
    capped_at = data.get("after_real_capability", spec)
    capped = _differ(spec, capped_at, lower=True)
    raised = _differ(capped_at, data.get("deserved"), lower=False)
    if capped:
        sentences.append(f"On {_names(capped)} that is more than its real capability "
                         f"({_subset(data.get('real_capability'), capped)}: its capability, or what its "
                         "parents leave it), so it is capped there.")
    if raised:
        sentences.append(f"On {_names(raised)} that is less than its guarantee "
                         f"({_subset(data.get('guarantee'), raised)}), so it is raised to the guarantee.")
    if not capped and not raised:
        sentences.append("It fits within its real capability and above its guarantee, so it is kept as is.")
    if data.get("capability"):
        inherited = [d for d in data.get("inherited_capability") or [] if d in data["capability"]]
        source = ""
        if inherited and parent:
            source = f" ({_names(inherited)} inherited from {parent.get('queue')})"
        sentences.append(f"It may never use more than its capability, "
                         f"{words(data.get('capability'))}{source}.")
    if request is not None:
        deserved = output_map_to_stored(data.get("deserved"))
        sentences.append(request_sentence(name, request, deserved, unmet_dims(request, deserved)))
    sentences.append(f"Result: queue {name} deserves {words(data.get('deserved'))}.")
    return Explanation("capacity", sentences, [], 0)
