"""`schedctl queue create|delete|operate`: vcctl's queue verbs over /api/v1/queues/."""

from __future__ import annotations

import argparse
from typing import Any

from schedctl import render
from schedctl.client import ApiClient, path_part
from schedctl.errors import UsageError
from schedctl.quantities import boolean, resource_list

QUEUES = "/api/v1/queues/"
STATES = ("Open", "Closed")
# Flags shared by create and `operate -a update`, with the API field each one sets.
SETTINGS = ("weight", "priority", "reclaimable", "capability", "deserved", "guarantee")


def add_settings(p: argparse.ArgumentParser, *, create: bool) -> None:
    """vcctl's queue setting flags; on update only the flags given are sent."""
    p.add_argument("-w", "--weight", type=int, default=None, help="queue weight (at least 1; default 1)"
                   if create else "new weight (at least 1)")
    p.add_argument("--priority", type=int, default=None, help="queue priority")
    p.add_argument("--reclaimable", type=boolean, default=None, metavar="true|false",
                   help="whether other queues may reclaim what it holds beyond deserved")
    for figure in ("capability", "deserved", "guarantee"):
        p.add_argument(f"--{figure}", type=resource_list, default=None, metavar="cpu=4,memory=8Gi",
                       help=f"{figure} per resource (Kubernetes quantities)")


def settings_body(args: argparse.Namespace) -> dict[str, Any]:
    """The settings flags that were given, as API fields."""
    return {name: getattr(args, name) for name in SETTINGS if getattr(args, name) is not None}


def queue_summary(verb: str):
    """`queue NAME <verb>` for the table output."""
    return lambda q: f"queue {q.get('name')} {verb}"


def cmd_create(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue create -n NAME`: POST /api/v1/queues/."""
    body = {"name": queue_name(args), "parent": args.parent, **settings_body(args)}
    if args.state:
        body["state"] = args.state
    render.emit(client.post(QUEUES, body), args.output, queue_summary("created"))


def cmd_delete(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue delete -n NAME`: only a queue without jobs or children (the server checks)."""
    name = queue_name(args)
    client.delete(f"{QUEUES}{path_part(name)}/")
    render.emit({"name": name, "deleted": True}, args.output, queue_summary("deleted"))


def cmd_operate(client: ApiClient, args: argparse.Namespace) -> None:
    """`queue operate -n NAME -a open|close|update`: vcctl's queue operations."""
    path = f"{QUEUES}{path_part(queue_name(args))}/"
    body = settings_body(args)
    if args.action in ("open", "close"):
        if body:
            raise UsageError(f"--action {args.action} takes no settings; use --action update for "
                             + ", ".join(f"--{k}" for k in body))
        queue = client.post(f"{path}{args.action}/", {})
        verb = {"Open": "opened", "Closed": "closed"}.get(str(queue.get("state")),
                                                          f"state {queue.get('state')}")
        if queue.get("state") == "Closing":
            verb = "closing (its running jobs finish first)"
        render.emit(queue, args.output, queue_summary(verb))
        return
    if not body:
        raise UsageError("--action update needs at least one of " + ", ".join(f"--{k}" for k in SETTINGS))
    render.emit(client.patch(path, body), args.output, queue_summary("updated"))


def _name_arguments(p: argparse.ArgumentParser) -> None:
    """NAME as vcctl takes it (`-n/--name`) or positionally."""
    p.add_argument("queue", nargs="?", metavar="NAME", help="queue name (or -n NAME)")
    p.add_argument("-n", "--name", default=None, help="queue name")


def queue_name(args: argparse.Namespace) -> str:
    """The one queue name given (positionally or with -n)."""
    names = {n for n in (args.queue, args.name) if n}
    if len(names) != 1:
        raise UsageError("give the queue name once: NAME or -n NAME")
    return names.pop()


def add_parsers(verbs: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """create, delete and operate under `queue`."""
    p = verbs.add_parser("create", parents=[common], help="create a queue",
                         description="Create a queue (vcctl queue create).")
    _name_arguments(p)
    p.add_argument("-p", "--parent", default=None, help="parent queue (default: top level under root)")
    p.add_argument("--state", choices=STATES, default=None, help="initial state (default Open)")
    add_settings(p, create=True)
    p.set_defaults(func=cmd_create)
    p = verbs.add_parser("delete", parents=[common], help="delete a queue without jobs or children",
                         description="Delete a queue that has no jobs and no child queues.")
    _name_arguments(p)
    p.set_defaults(func=cmd_delete)
    p = verbs.add_parser("operate", parents=[common], help="open, close or update a queue",
                         description="Open or close a queue, or change its settings (--action update "
                                     "with the flags to change).")
    _name_arguments(p)
    p.add_argument("-a", "--action", required=True, choices=("open", "close", "update"))
    add_settings(p, create=False)
    p.set_defaults(func=cmd_operate)
