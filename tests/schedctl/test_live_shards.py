"""`schedctl nodeshard list` against a live server."""

from __future__ import annotations

import pytest
import yaml

from schedweb.core import services
from tests.schedctl.support import Run
from tests.schedctl.test_live import cluster  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True, reset_sequences=True)


def test_nodeshard_list(cluster):  # noqa: F811
    assert cluster.run("nodeshard", "list") == Run(0, "", "No nodeshards found.\n")
    shard = services.node_shard_create(name="gpu", scheduler_name="volcano-gpu", nodes_desired=["gpu-0"])
    services.node_shard_set_in_use(shard=shard, nodes=["n0"])
    services.node_shard_create(name="rest", scheduler_name="volcano-rest", mode="soft",
                               nodes_desired=["n0", "n1"])
    assert cluster.run("nodeshard", "list") == Run(0, (
        "NAME   SCHEDULER      MODE   DESIRED   IN-USE   TO-ADD   TO-REMOVE\n"
        "gpu    volcano-gpu    hard   1         1        1        1\n"
        "rest   volcano-rest   soft   2         0        2        0\n"), "")
    listed = yaml.safe_load(cluster.run("nodeshard", "list", "-o", "json").out)
    assert [(s["name"], s["nodes_desired"]) for s in listed] == [("gpu", ["gpu-0"]), ("rest", ["n0", "n1"])]
