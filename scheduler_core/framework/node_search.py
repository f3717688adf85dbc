"""The feasible-node search limit (Volcano's `CalculateNumOfFeasibleNodesToFind` and the
predicate helper's rotating index).

Volcano's predicate pass does not look at every node for every task: it scans the node list from
where the previous scan stopped and stops once it has found K feasible nodes; only those K are
scored. With N nodes in the session (Volcano's node list: cordoned nodes count and fail the
predicate like any infeasible node):
- K = N when N <= `minimum_feasible_nodes` (100) or `percentage_nodes_to_find` >= 100;
- otherwise the percentage is `percentage_nodes_to_find`, or, when it is 0 (unset), the adaptive
  `50 - N // 125`, floored at `minimum_percentage_nodes_to_find` (5);
- K = max(`minimum_feasible_nodes`, N * percentage // 100) (integer arithmetic, as Go's int32).
The scan starts at `NodeScan.next_index % N` in row order (node names sorted). Upstream's scan
counts every node it processed, including the (K+1)-th feasible one whose discovery stops it;
so the next scan starts right after that node, and a scan that found K or fewer feasible nodes
went all the way round (the index is unchanged). `NodeScan` is the one piece of state a
session does not own: the caller keeps it from cycle to cycle (Volcano keeps it in a process
global) and passes it to `run_session`; every action that filters nodes for a task shares it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Volcano's option names (command-line flags) and their defaults.
OPTION_DEFAULTS = {"minimum-feasible-nodes": 100, "minimum-percentage-nodes-to-find": 5,
                   "percentage-nodes-to-find": 0}
BASELINE_PERCENTAGE = 50  # upstream baselinePercentageOfNodesToFind


@dataclass(frozen=True)
class SearchOptions:
    """Volcano's scheduler-level search options (`--minimum-feasible-nodes` and friends)."""

    minimum_feasible_nodes: int = 100
    minimum_percentage_nodes_to_find: int = 5
    percentage_nodes_to_find: int = 0

    def to_dict(self) -> dict[str, int]:
        """The options under Volcano's names, only those that differ from the defaults."""
        out = {}
        for name, default in OPTION_DEFAULTS.items():
            value = getattr(self, name.replace("-", "_"))
            if value != default:
                out[name] = value
        return out


def parse_options(raw: dict[str, Any], where: str, problems: list[str],
                  base: SearchOptions | None = None) -> SearchOptions:
    """SearchOptions from a mapping whose keys are Volcano's names (dashes or underscores);
    anything else, or a value that is not a non-negative integer, is listed in `problems`."""
    values = {} if base is None else {f: getattr(base, f) for f in SearchOptions.__dataclass_fields__}
    for key, value in raw.items():
        name = str(key).replace("_", "-")
        if name not in OPTION_DEFAULTS:
            problems.append(f"{where}: unknown option {key}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**31 - 1:
            problems.append(f"{where}: {key} must be a non-negative integer")
        else:
            values[name.replace("-", "_")] = value
    return SearchOptions(**values)


def nodes_to_find(n: int, options: SearchOptions) -> int:
    """K, the number of feasible nodes after which a task's predicate pass stops (of n nodes)."""
    if n <= options.minimum_feasible_nodes or options.percentage_nodes_to_find >= 100:
        return n
    percentage = options.percentage_nodes_to_find
    if percentage <= 0:
        percentage = max(BASELINE_PERCENTAGE - n // 125, options.minimum_percentage_nodes_to_find)
    return max(n * percentage // 100, options.minimum_feasible_nodes)


@dataclass
class NodeScan:
    """Where the next predicate pass starts (upstream `lastProcessedNodeIndex`): kept by the
    caller across sessions (the cycle keeps one per process, the forecast one per forecast)."""

    next_index: int = 0


class FeasibleSearch:
    """One session's view of the limit: K for its node count, and the shared NodeScan."""

    __slots__ = ("n", "k", "scan", "limited")

    def __init__(self, n: int, options: SearchOptions, scan: NodeScan | None = None) -> None:
        self.n = n
        self.k = nodes_to_find(n, options)
        self.scan = scan if scan is not None else NodeScan()
        # False: every feasible node is kept, the index never moves (N <= the minimum).
        self.limited = self.k < n

    def window(self, feasible: np.ndarray) -> tuple[np.ndarray, int] | None:
        """Without moving the index: (the rows the scan would keep, ascending; the node that
        stops it) when more than K rows are feasible, else None (the scan keeps all of them)."""
        if not self.limited:
            return None
        k, start = self.k, self.scan.next_index % self.n
        # Usually K+1 feasible rows lie within about 2K rows of the start: look there first.
        near = np.flatnonzero(feasible[start:start + 2 * (k + 1)])
        if len(near) > k:
            return near[:k] + start, int(near[k]) + start
        rows = np.flatnonzero(feasible)
        m = len(rows)
        if m <= k:
            return None
        i = int(np.searchsorted(rows, start))
        if i + k <= m:
            kept = rows[i:i + k]
        else:  # wraps round: the rows before the start come first in row order
            kept = np.concatenate((rows[:i + k - m], rows[i:]))
        return kept, int(rows[(i + k) % m])

    def advance(self, stop: int | None) -> None:
        """The scan ended at row `stop` (the (K+1)-th feasible node), or went all the way round."""
        if stop is not None:
            self.scan.next_index = (stop + 1) % self.n
        elif self.n:
            self.scan.next_index %= self.n

    def take(self, feasible: np.ndarray) -> np.ndarray:
        """The feasible mask the predicate pass hands on (the first K from the rotating start),
        advancing the index; `feasible` itself when it keeps everything."""
        got = self.window(feasible)
        if got is None:
            self.advance(None)
            return feasible
        kept, stop = got
        self.advance(stop)
        mask = np.zeros(len(feasible), dtype=bool)
        mask[kept] = True
        return mask
