"""`schedctl nodeshard list`: the NodeShards (scheduler, mode, desired / in use / to add /
to remove counts), as `kubectl get nodeshards` lists Volcano's."""

from __future__ import annotations

import argparse

from schedctl import render
from schedctl.client import ApiClient

NODESHARDS = "/api/v1/nodeshards/"
HEADERS = ("Name", "Scheduler", "Mode", "Desired", "In-Use", "To-Add", "To-Remove")


def shard_row(shard: dict) -> list:
    """One table row of a NodeShard body."""
    return [shard.get("name"), shard.get("scheduler_name"), shard.get("mode"),
            *(render.number(len(shard.get(key) or [])) for key in (
                "nodes_desired", "nodes_in_use", "nodes_to_add", "nodes_to_remove"))]


def cmd_list(client: ApiClient, args: argparse.Namespace) -> None:
    """`nodeshard list`: every NodeShard, by name."""
    render.listing(client.list_all(NODESHARDS), args.output, "nodeshards", HEADERS, shard_row)


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`nodeshard list`."""
    shard = sub.add_parser("nodeshard", help="list NodeShards",
                           description="NodeShards: the nodes each scheduler instance owns.")
    verbs = shard.add_subparsers(dest="verb", metavar="COMMAND", required=True)
    p = verbs.add_parser("list", parents=[common], help="list NodeShards",
                         description="List every NodeShard: scheduler, mode and node counts.")
    p.set_defaults(func=cmd_list)
