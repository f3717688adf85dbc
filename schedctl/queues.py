"""`schedctl queue list|get|open|close` (create/delete/operate: queue_write) and `schedctl node list`."""

from __future__ import annotations

import argparse
from typing import Any

from schedctl import queue_write, render
from schedctl.client import ApiClient, path_part

QUEUES = "/api/v1/queues/"
TREE = "/api/v1/queues/tree/"
NODES = "/api/v1/nodes/"
QUEUE_HEADERS = ("NAME", "PARENT", "STATE", "WEIGHT", "RECLAIMABLE", "DESERVED", "ALLOCATED", "CAPABILITY",
                 "PENDING")
NODE_HEADERS = ("NAME", "STATUS", "CPU", "MEMORY", "PODS", "OTHER", "ALLOCATED", "TAINTS", "CPU USAGE",
                "MEMORY USAGE")
_STATE_WORDS = {"Open": "opened", "Closed": "closed", "Closing": "closing (its running jobs finish first)"}


def tree_paths(tree: dict | None) -> dict[str, list[dict]]:
    """queue name -> the tree nodes from the top-level queue down to it (the implicit root left out)."""
    out: dict[str, list[dict]] = {}

    def walk(node: dict, path: list[dict]) -> None:
        for child in node.get("children") or []:
            here = [*path, child]
            out[str(child.get("name"))] = here
            walk(child, here)

    walk(tree or {}, [])
    return out


def load_tree(client: ApiClient) -> dict[str, list[dict]]:
    """The queue tree with the newest cycle's figures, indexed by queue name."""
    return tree_paths(client.get(TREE))


def _figures(paths: dict[str, list[dict]], name: str) -> dict:
    path = paths.get(name)
    return (path[-1].get("figures") or {}) if path else {}


def queue_row(queue: dict, paths: dict[str, list[dict]]) -> list[Any]:
    """One row of QUEUE_HEADERS (figures from the tree; `-` before the first cycle)."""
    fig = _figures(paths, str(queue.get("name")))
    return [queue.get("name"), queue.get("parent") or "root", queue.get("state"), queue.get("weight"),
            _yes_no(queue.get("reclaimable")), render.resources(fig.get("deserved")),
            render.resources(fig.get("allocated")) if fig else None,
            render.resources(queue.get("capability")), fig.get("pending_jobs")]


def _yes_no(value: Any) -> str:
    return {True: "true", False: "false"}.get(value, render.cell_text(value))


def cmd_list(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue list`: every queue, by name, with deserved / allocated / pending from the tree."""
    queues = client.list_all(QUEUES)
    if args.output != "table":
        render.emit(queues, args.output, str)
        return
    if not queues:
        render.empty_notice("queues")
        return
    paths = load_tree(client)
    render.emit(queues, args.output,
                lambda qs: render.table(QUEUE_HEADERS, [queue_row(q, paths) for q in qs]))


def cmd_get(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue get NAME`: one queue."""
    queue = client.get(f"{QUEUES}{path_part(args.name)}/")
    paths = load_tree(client) if args.output == "table" else {}
    render.emit(queue, args.output, lambda q: render.table(QUEUE_HEADERS, [queue_row(q, paths)]))


def _set_state(client: ApiClient, args: argparse.Namespace, action: str) -> None:
    queue = client.post(f"{QUEUES}{path_part(args.name)}/{action}/", {})
    state = str(queue.get("state"))
    render.emit(queue, args.output,
                lambda q: f"queue {q.get('name')} {_STATE_WORDS.get(state, 'state ' + state)}")


def cmd_open(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue open NAME`: the queue accepts and schedules jobs again."""
    _set_state(client, args, "open")


def cmd_close(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue close NAME`: no new jobs; running ones finish."""
    _set_state(client, args, "close")


def node_row(node: dict) -> list[Any]:
    """One row of NODE_HEADERS: allocatable per resource, schedulability, what its tasks hold
    (`allocated`: the requests of the tasks on it), taints, reported usage."""
    alloc = node.get("allocatable") or {}
    taints = ",".join(f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                      for t in node.get("taints") or [] if isinstance(t, dict))
    other = render.resources(alloc, skip=("cpu", "memory", "pods")) if alloc else None
    return [node.get("name"), "SchedulingDisabled" if node.get("unschedulable") else "Ready",
            render.cpu(alloc.get("cpu")) if "cpu" in alloc else None,
            render.memory(alloc.get("memory")) if "memory" in alloc else None,
            render.number(alloc.get("pods")) if "pods" in alloc else None,
            None if other == "0" else other, render.resources(node.get("allocated")), taints,
            render.percent(node.get("usage_cpu")),
            render.percent(node.get("usage_memory"))]


def cmd_nodes(client: ApiClient, args: argparse.Namespace) -> None:
    """`node list`: every node, by name."""
    render.listing(client.list_all(NODES), args.output, "nodes", NODE_HEADERS, node_row)


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`queue` and `node` with their subcommands."""
    queue = sub.add_parser("queue", help="list, show, create, delete, open, close and update queues",
                           description="Queues (the hierarchy under the implicit root).")
    verbs = queue.add_subparsers(dest="verb", metavar="COMMAND", required=True)
    p = verbs.add_parser("list", parents=[common], help="list queues",
                         description="List every queue with the newest cycle's deserved and allocated.")
    p.set_defaults(func=cmd_list)
    for name, func, text in (("get", cmd_get, "show a queue"),
                             ("open", cmd_open, "open a queue: it accepts and schedules jobs"),
                             ("close", cmd_close, "close a queue: no new jobs, running ones finish")):
        p = verbs.add_parser(name, parents=[common], help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("name", metavar="NAME", help="queue name")
        p.set_defaults(func=func)
    queue_write.add_parsers(verbs, common)
    node = sub.add_parser("node", help="list nodes", description="Cluster nodes.")
    verbs = node.add_subparsers(dest="verb", metavar="COMMAND", required=True)
    p = verbs.add_parser("list", parents=[common], help="list nodes",
                         description="List every node: allocatable, schedulability, taints, usage.")
    p.set_defaults(func=cmd_nodes)
