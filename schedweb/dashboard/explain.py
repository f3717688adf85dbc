"""The queue plugin's explanation JSON (scheduler_core proportion / capacity) in plain words."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schedweb.dashboard.units import fmt_map

_CLAMP_WORDS = {
    "request": "capped at what the queue asks for: its whole request is met",
    "real capability": "capped at its real capability (its hard limit, or what its parents leave it)",
    "guarantee": "raised to its guarantee, which is always reserved for it",
}


def _stored(quantities: Mapping[str, float] | None) -> dict[str, float] | None:
    """Output units (cores, bytes, whole scalars) back to stored units for formatting."""
    if quantities is None:
        return None
    return {k: float(v) * (1 if k == "memory" else 1000) for k, v in quantities.items() if k != "pods"}


def words(quantities: Mapping[str, float] | None) -> str:
    """`cpu 12, memory 64 GiB, GPU 4` for an explanation's resource object."""
    return fmt_map(_stored(quantities))


def _any(quantities: Mapping[str, float] | None) -> bool:
    """True when some amount is above zero (an all-zero guarantee means none)."""
    return any(float(v) > 0 for v in (quantities or {}).values())


@dataclass
class Explanation:
    """Sentences for the queue page, and the rounds as table rows (proportion only)."""

    plugin: str
    sentences: list[str]
    rounds: list[dict[str, Any]]
    more_rounds: int


def explain(data: Mapping[str, Any] | None, queue_name: str) -> Explanation | None:
    """Plain-language story of how the queue's deserved share was computed (None: no cycle yet)."""
    if not data:
        return None
    plugin = str(data.get("plugin", ""))
    if plugin == "proportion":
        return _proportion(data, queue_name)
    if plugin == "capacity":
        return _capacity(data, queue_name)
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
            "deserved": words(r.get("deserved")),
            "clamp": _CLAMP_WORDS.get(clamp, "not capped: it keeps its weighted part"),
            "met": bool(r.get("met")),
        })
    if rounds:
        last = rounds[-1]
        sentences.append(
            f"It took part in {data.get('rounds_total', len(rounds))} of {data.get('algorithm_rounds')} "
            f"rounds. In the last one, {last['remaining']} was still unshared among queues of total weight "
            f"{last['total_weight']}; its weight {last['weight']} brought its deserved to "
            f"{last['deserved']}, {last['clamp']}.")
    sentences.append(f"Result: queue {name} deserves {words(data.get('deserved'))}.")
    more = max(0, int(data.get("rounds_total") or 0) - len(rounds))
    return Explanation("proportion", sentences, rounds, more)


def _capacity(data: Mapping[str, Any], name: str) -> Explanation:
    if data.get("best_effort"):
        return Explanation("capacity", [
            f"Queue {name} has no deserved resources: it runs only on what other queues leave free, "
            "and its tasks are the first to be reclaimed."], [], 0)
    sentences = [f"The capacity plugin starts from the deserved configured for queue {name}: "
                 f"{words(data.get('spec_deserved'))}."]
    parent = data.get("parent")
    if parent:
        sentences.append(f"It sits under {parent.get('queue')}, which deserves "
                         f"{words(parent.get('deserved'))}.")
    clamp = data.get("clamp", "none")
    if clamp == "real capability":
        sentences.append(f"That is more than its real capability ({words(data.get('real_capability'))}: "
                         "its capability, or what its parents leave it), so it is capped there.")
    elif clamp == "guarantee":
        sentences.append(f"That is less than its guarantee ({words(data.get('guarantee'))}), "
                         "so it is raised to the guarantee.")
    else:
        sentences.append("It fits within its real capability and above its guarantee, so it is kept as is.")
    if data.get("capability"):
        sentences.append(f"It may never use more than its capability, {words(data.get('capability'))}.")
    sentences.append(f"Result: queue {name} deserves {words(data.get('deserved'))}.")
    return Explanation("capacity", sentences, [], 0)
