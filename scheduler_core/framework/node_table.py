"""NodeTable: the nodes' resources as row-aligned numpy arrays (the allocation hot path).

Rows are the nodes sorted by name, so "lowest row" means "name sorts first". Columns are
`dims`: cpu, memory, then every scalar resource found on any node, sorted. Values are in stored
units (milli-cpu, bytes, scalar milli-units). The session calls `update_row(node)` after each
change of one node, so the arrays always mirror the NodeInfo objects.

Pod slots are part of every fit test here (Volcano adds `pods: 1` to each request and compares
it like a resource): a task needs one free slot. `idle_pods` = allocatable pods minus the tasks
that occupy idle (Running, Binding, Bound, Allocated, Releasing); `future_pods` = idle slots plus
Releasing tasks minus Pipelined ones, i.e. allocatable pods minus the tasks staying or coming.
A node whose allocatable has no `pods` figure (`max_task_num` 0) is unlimited here (Volcano
would treat it as zero slots): both columns hold +inf. Queue arithmetic never sees pods.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from scheduler_core.model import NodeInfo, TaskStatus
from scheduler_core.resources import MIN_RESOURCE, Resource


def _write(row: np.ndarray, resource: Resource, dim_index: dict[str, int]) -> None:
    """Write `resource` into a row over the table's dims whose scalar columns are zero (scalars the
    table lacks are dropped)."""
    row[0] = resource.milli_cpu
    row[1] = resource.memory
    for name, value in resource.scalars.items():
        j = dim_index.get(name)
        if j is not None:
            row[j] = value


class NodeTable:
    """Numpy view of the nodes: allocatable, idle, used, releasing, pipelined, future idle, pods.

    The (n, d) arrays are Fortran-ordered: a column (`idle[:, 0]`, all nodes' cpu) is contiguous.
    """

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self.nodes: list[NodeInfo] = sorted(nodes, key=lambda n: n.name)
        self.names: list[str] = [n.name for n in self.nodes]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        scalars: set[str] = set()
        for n in self.nodes:
            scalars.update(n.allocatable.scalars)
        self.dims: list[str] = ["cpu", "memory", *sorted(scalars)]
        self.dim_index: dict[str, int] = {d: i for i, d in enumerate(self.dims)}
        n, d = len(self.nodes), len(self.dims)
        self.allocatable = np.zeros((n, d), order="F")
        self.idle = np.zeros((n, d), order="F")
        self.used = np.zeros((n, d), order="F")
        self.releasing = np.zeros((n, d), order="F")
        self.pipelined = np.zeros((n, d), order="F")
        self.future = np.zeros((n, d), order="F")
        self.pod_count = np.zeros(n, dtype=np.int64)
        self.max_pods = np.zeros(n, dtype=np.int64)
        # Free pod slots against idle and against future idle (+inf: no limit), and the
        # Pipelined / Releasing task counts they are derived from.
        self.idle_pods = np.full(n, np.inf)
        self.future_pods = np.full(n, np.inf)
        self.pipelined_pods = np.zeros(n, dtype=np.int64)
        self.releasing_pods = np.zeros(n, dtype=np.int64)
        self.schedulable = np.ones(n, dtype=bool)
        # None for a full table; for a view, the rows of the full table it shows (view(rows)).
        self.rows: np.ndarray | None = None
        self._row_views: dict[int, NodeTable] = {}
        # Cache of request -> (vector, compared columns, scalar names the nodes lack).
        self._req_cache: dict[tuple, tuple[np.ndarray, list[int], np.ndarray, list[str]]] = {}
        # Rows the session rewrote (placements, evictions, undos): what a kept table
        # (framework.kept_nodes) refills at the next open besides the rows the job log names.
        self.touched: set[int] = set()
        self._fill_all()

    def _fill_all(self) -> None:
        """Every row at once, column by column: the values `_fill` writes row by row."""
        if self.nodes:
            self.fill_rows(None, self.nodes)

    def fill_rows(self, rows: list[int] | None, nodes: list[NodeInfo]) -> None:
        """Rows `rows` (None: every row, into a new table's zeros) written column by column from
        `nodes` (one per row), allocatable, pod limit and cordon included: the values a new table
        holds for those nodes. A kept table (framework.kept_nodes) refills its changed rows so."""
        dim_index = self.dim_index
        sel: slice | list[int] = slice(None) if rows is None else rows
        if rows is not None:
            for i, node in zip(rows, nodes, strict=True):
                self.nodes[i] = node
            self.touched.update(rows)
        for arr, attr in ((self.allocatable, "allocatable"), (self.idle, "idle"), (self.used, "used"),
                          (self.releasing, "releasing"), (self.pipelined, "pipelined")):
            values = [getattr(node, attr) for node in nodes]
            if rows is not None and arr.shape[1] > 2:
                arr[sel, 2:] = 0.0
            arr[sel, 0] = [r.milli_cpu for r in values]
            arr[sel, 1] = [r.memory for r in values]
            for k, r in enumerate(values):
                if r.scalars:
                    i = k if rows is None else rows[k]
                    for name, v in r.scalars.items():
                        j = dim_index.get(name)
                        if j is not None:
                            arr[i, j] = v
        # Element by element the same float operations as `_fill`: (idle + releasing) - pipelined.
        if rows is None:
            np.subtract(self.idle + self.releasing, self.pipelined, out=self.future)
        else:
            self.future[sel] = (self.idle[sel] + self.releasing[sel]) - self.pipelined[sel]
        max_pods = np.array([node.allocatable.max_task_num for node in nodes], dtype=np.int64)
        self.max_pods[sel] = max_pods
        self.schedulable[sel] = [not node.unschedulable for node in nodes]
        pod_count = np.array([len(node.tasks) for node in nodes], dtype=np.int64)
        self.pod_count[sel] = pod_count
        pipelined_status, releasing_status = TaskStatus.PIPELINED, TaskStatus.RELEASING
        limited = np.flatnonzero(max_pods > 0)
        pipelined, releasing = np.zeros(len(nodes), dtype=np.int64), np.zeros(len(nodes), dtype=np.int64)
        for k in limited.tolist():
            statuses = [t.status for t in nodes[k].tasks.values()]
            pipelined[k] = statuses.count(pipelined_status)
            releasing[k] = statuses.count(releasing_status)
        self.pipelined_pods[sel] = pipelined
        self.releasing_pods[sel] = releasing
        # `_slots` for those rows (whole numbers: the same values as its int arithmetic); rows
        # without a pod figure are unlimited.
        limit, pods = max_pods[limited], pod_count[limited]
        idle_pods, future_pods = np.full(len(nodes), np.inf), np.full(len(nodes), np.inf)
        idle_pods[limited] = limit - (pods - pipelined[limited])
        future_pods[limited] = limit - (pods - releasing[limited])
        self.idle_pods[sel] = idle_pods
        self.future_pods[sel] = future_pods

    def __len__(self) -> int:
        return len(self.names)

    def release(self) -> None:
        """Forget the cached one-row views: each points back at this table (a reference cycle
        that would keep the table, its nodes and their tasks for the cyclic collector)."""
        self._row_views.clear()

    def view(self, rows: np.ndarray) -> NodeTable:
        """A read-only NodeTable over the given rows only (row i of the view = rows[i]).

        Scoring a few changed rows through a view costs per-row numpy work instead of
        whole-table work. Never call update_row on a view.
        """
        if len(rows) == 1:
            # One-row views are what a placement re-scores: cached, and live (slices of the
            # arrays, which are only ever written in place), so they never go stale.
            r = int(rows[0])
            hit = self._row_views.get(r)
            if hit is None:
                hit = self._row_views[r] = self._make_view(np.array([r], dtype=np.intp), slice(r, r + 1))
            return hit
        return self._make_view(rows, rows)

    def _make_view(self, rows: np.ndarray, sel: slice | np.ndarray) -> NodeTable:
        v = _RowView.__new__(_RowView)
        v.rows, v._row_views, v._full, v._sel = rows, {}, self, sel
        v.dims, v.dim_index, v._req_cache = self.dims, self.dim_index, self._req_cache
        return v

    # -- rows ------------------------------------------------------------------------------
    def vector(self, resource: Resource) -> np.ndarray:
        """The resource as a row over `dims` (scalars the table lacks are dropped)."""
        v = np.zeros(len(self.dims))
        _write(v, resource, self.dim_index)
        return v

    def _set(self, arr: np.ndarray, i: int, resource: Resource) -> None:
        # Element writes into the existing row: cheaper than building a vector per update.
        row = arr[i]
        if len(row) > 2:
            row[2:] = 0.0
        _write(row, resource, self.dim_index)

    def _fill(self, i: int, node: NodeInfo) -> None:
        self.touched.add(i)
        self._set(self.idle, i, node.idle)
        self._set(self.used, i, node.used)
        self._set(self.releasing, i, node.releasing)
        self._set(self.pipelined, i, node.pipelined)
        np.subtract(self.idle[i] + self.releasing[i], self.pipelined[i], out=self.future[i])
        self.pod_count[i] = len(node.tasks)
        if self.max_pods[i] > 0:
            pipelined = releasing = 0
            for t in node.tasks.values():
                st = t.status
                if st is TaskStatus.PIPELINED:
                    pipelined += 1
                elif st is TaskStatus.RELEASING:
                    releasing += 1
            self.pipelined_pods[i] = pipelined
            self.releasing_pods[i] = releasing
            self._slots(i)

    def _slots(self, i: int) -> None:
        """Row i's free slots from its pod count and its Pipelined / Releasing counts."""
        limit, pods = int(self.max_pods[i]), int(self.pod_count[i])
        if limit > 0:
            self.idle_pods[i] = limit - (pods - int(self.pipelined_pods[i]))
            self.future_pods[i] = limit - (pods - int(self.releasing_pods[i]))

    def update_row(self, node: NodeInfo) -> None:
        """Copy one node's current accounting into its row."""
        self._fill(self.index[node.name], node)

    def update_placed(self, node: NodeInfo, pipelined: bool) -> None:
        """update_row after a task was added to the node as Allocated (idle and used changed)
        or Pipelined (pipelined changed): only those arrays are rewritten."""
        i = self.index[node.name]
        self.touched.add(i)
        if pipelined:
            self._set(self.pipelined, i, node.pipelined)
        else:
            self._set(self.idle, i, node.idle)
            self._set(self.used, i, node.used)
        np.subtract(self.idle[i] + self.releasing[i], self.pipelined[i], out=self.future[i])
        if pipelined and self.max_pods[i] > 0:
            self.pipelined_pods[i] += len(node.tasks) - int(self.pod_count[i])
        self.pod_count[i] = len(node.tasks)
        self._slots(i)

    def copy(self) -> NodeTable:
        """A table of its own over the same rows: arrays copied, the name lists shared (never
        changed in place)."""
        t = NodeTable.__new__(NodeTable)
        t.nodes, t.names, t.index = list(self.nodes), self.names, self.index
        t.dims, t.dim_index = self.dims, self.dim_index
        for name in _VIEW_ARRAYS:
            setattr(t, name, getattr(self, name).copy(order="K"))
        t.rows, t._row_views, t._req_cache, t.touched = None, {}, {}, set()
        return t

    def row_state(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """Copies of row i's (idle, used, future, pipelined, pod count): what `set_row_state` takes."""
        return (self.idle[i].copy(), self.used[i].copy(), self.future[i].copy(), self.pipelined[i].copy(),
                int(self.pod_count[i]))

    def set_row_state(self, i: int, idle: np.ndarray, used: np.ndarray, future: np.ndarray,
                      pipelined: np.ndarray, pods: int) -> None:
        """Overwrite row i's accounting (allocate's run probes ask the plugins about the row as it
        would be after more placements, then put the saved `row_state` back; the nodes are not
        touched)."""
        self.idle[i] = idle
        self.used[i] = used
        self.future[i] = future
        self.pipelined[i] = pipelined
        self.pod_count[i] = pods
        self.touched.add(i)
        self._slots(i)

    def set_cells(self, i: int, cols: list[int], idle: list[float], used: list[float], future: list[float],
                  pods: int) -> None:
        """Overwrite some columns of row i's idle, used and future idle, and its pod count (a run
        probe: the columns a request changes; `set_row_state` puts the row back)."""
        a_idle, a_used, a_future = self.idle, self.used, self.future
        for c, j in enumerate(cols):
            a_idle[i, j] = idle[c]
            a_used[i, j] = used[c]
            a_future[i, j] = future[c]
        self.pod_count[i] = pods
        self._slots(i)

    def future_idle(self) -> np.ndarray:
        """idle + releasing - pipelined for every row (kept current, do not modify)."""
        return self.future

    def all_rows(self) -> np.ndarray:
        """A mask selecting every row."""
        return np.ones(len(self), dtype=bool)

    # -- resource fit ----------------------------------------------------------------------
    def _request(self, resreq: Resource) -> tuple[np.ndarray, list[int], np.ndarray, list[str]]:
        key = (resreq.milli_cpu, resreq.memory, tuple(sorted(resreq.scalars.items())))
        hit = self._req_cache.get(key)
        if hit is not None:
            return hit
        vec = self.vector(resreq)
        # cpu and memory are always compared (Volcano's LessEqual); scalars only when requested.
        cols = [0, 1]
        missing: list[str] = []
        for name in sorted(resreq.scalars):
            value = resreq.scalars[name]
            j = self.dim_index.get(name)
            if j is None:
                # A node without the scalar has 0 of it (Zero default): fails when requested.
                if value >= MIN_RESOURCE:
                    missing.append(name)
            else:
                cols.append(j)
        # l <= r within tolerance  <=>  l - r < MIN_RESOURCE  <=>  r > l - MIN_RESOURCE;
        # columns not compared get -inf so they always pass (no fancy indexing per call).
        threshold = np.full(len(self.dims), -np.inf)
        threshold[cols] = vec[cols] - MIN_RESOURCE
        hit = (vec, cols, threshold, missing)
        self._req_cache[key] = hit
        return hit

    def slots(self, future: bool = False) -> np.ndarray:
        """Free pod slots per row against idle or future idle (+inf: unlimited; do not modify)."""
        return self.future_pods if future else self.idle_pods

    def fit_mask(self, resreq: Resource, future: bool = False) -> np.ndarray:
        """Rows where `resreq.less_equal(idle or future_idle, Zero)` holds (tolerance 0.1) and
        a pod slot is free (see the module docstring)."""
        _, cols, threshold, missing = self._request(resreq)
        if missing:
            return np.zeros(len(self), dtype=bool)
        avail = self.future if future else self.idle
        mask = (self.future_pods if future else self.idle_pods) >= 1
        # Column by column: arrays are Fortran-ordered, so each column is contiguous.
        for j in cols:
            mask &= avail[:, j] > threshold[j]
        return mask

    def fits_row(self, resreq: Resource, row: int, future: bool = False) -> bool:
        """fit_mask for a single row (cheap check after choosing a node)."""
        _, _, threshold, missing = self._request(resreq)
        if missing:
            return False
        if (self.future_pods if future else self.idle_pods)[row] < 1:
            return False
        avail = self.future[row] if future else self.idle[row]
        return bool((avail > threshold).all())

    def insufficient_masks(self, resreq: Resource, mask: np.ndarray | None = None,
                           future: bool = False) -> list[tuple[str, np.ndarray]]:
        """("Insufficient <dim>", rows) for rows in `mask` that do not fit.

        Each failing row is reported once, under its first insufficient dimension in `dims`
        order (cpu, memory, then scalars sorted, then pods: "Insufficient pods" for a row
        without a free slot), like Volcano's WrapInsufficientResourceReason.
        """
        vec, cols, _, missing = self._request(resreq)
        rows = self.all_rows() if mask is None else mask.copy()
        avail = self.future if future else self.idle
        out: list[tuple[str, np.ndarray]] = []
        for j in cols:
            bad = rows & ((vec[j] - avail[:, j]) >= MIN_RESOURCE)
            if bad.any():
                out.append((f"Insufficient {self.dims[j]}", bad))
                rows &= ~bad
        if missing and rows.any():
            out.append((f"Insufficient {missing[0]}", rows))
            return out
        bad = rows & ((self.future_pods if future else self.idle_pods) < 1)
        if bad.any():
            out.append(("Insufficient pods", bad))
        return out

    def insufficient(self, resreq: Resource, mask: np.ndarray | None = None,
                     future: bool = False) -> dict[str, int]:
        """Counts of `insufficient_masks`: {"Insufficient cpu": 3, ...}."""
        return {reason: int(m.sum()) for reason, m in self.insufficient_masks(resreq, mask, future)}


# The row-aligned arrays a view selects from the full table when first read.
_VIEW_ARRAYS = frozenset({"allocatable", "idle", "used", "releasing", "pipelined", "future", "pod_count",
                          "max_pods", "schedulable", "idle_pods", "future_pods", "pipelined_pods",
                          "releasing_pods"})


class _RowView(NodeTable):
    """A NodeTable view (see NodeTable.view): each array and the per-row Python lists (nodes,
    names, index) are selected only when a plugin first reads them (scorers read two or three).
    """

    _full: NodeTable
    _sel: slice | np.ndarray

    def __len__(self) -> int:
        return len(self.rows)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        # Only called for attributes not set yet: the lazy arrays and lists.
        if name in _VIEW_ARRAYS:
            # A slice (one-row views) is live; a row list copies, as the view is used at once.
            value: object = getattr(self._full, name)[self._sel]
        elif name == "nodes":
            full_nodes = self._full.nodes
            value = [full_nodes[i] for i in self.rows.tolist()]  # type: ignore[union-attr]
        elif name == "names":
            value = [n.name for n in self.nodes]
        elif name == "index":
            value = {n: i for i, n in enumerate(self.names)}
        else:
            raise AttributeError(name)
        setattr(self, name, value)
        return value
