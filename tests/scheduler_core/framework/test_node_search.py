"""The feasible-node search limit: K per node count (Volcano's CalculateNumOfFeasibleNodesToFind),
the rotating scan window, and the options in the configuration and in scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.framework.conf import ConfError, parse_conf
from scheduler_core.framework.node_search import FeasibleSearch, NodeScan, SearchOptions, nodes_to_find
from scheduler_core.scenario import ScenarioError, load_scenario

DEFAULTS = SearchOptions()


@pytest.mark.parametrize(("n", "k"), [
    (0, 0), (1, 1), (100, 100),      # at or under the minimum: every node
    (101, 100),                      # 50% of 101 = 50, raised to the minimum
    (250, 120),                      # 50 - 250 // 125 = 48%: 120
    (1000, 420),                     # 42%
    (5000, 500),                     # 10%
    (5624, 337), (5625, 281),      # 6%, then 5%
    (6000, 300),                     # 50 - 48 = 2%, floored at 5%
])
def test_k_follows_volcanos_adaptive_percentage(n, k):
    assert nodes_to_find(n, DEFAULTS) == k


@pytest.mark.parametrize(("options", "n", "k"), [
    (SearchOptions(percentage_nodes_to_find=100), 5000, 5000),
    (SearchOptions(percentage_nodes_to_find=30), 1000, 300),
    (SearchOptions(percentage_nodes_to_find=5), 1000, 100),        # raised to the minimum
    (SearchOptions(minimum_feasible_nodes=2000), 1000, 1000),
    (SearchOptions(minimum_percentage_nodes_to_find=20), 6000, 1200),
    (SearchOptions(minimum_feasible_nodes=10, percentage_nodes_to_find=10), 30, 10),
])
def test_k_with_configured_options(options, n, k):
    assert nodes_to_find(n, options) == k


def mask(n: int, rows) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[list(rows)] = True
    return out


def test_the_scan_keeps_k_feasible_rows_and_goes_on_after_the_one_that_stopped_it():
    search = FeasibleSearch(30, SearchOptions(minimum_feasible_nodes=3, percentage_nodes_to_find=10))
    assert search.k == 3 and search.limited
    feasible = mask(30, [1, 4, 5, 8, 20, 29])
    assert np.flatnonzero(search.take(feasible)).tolist() == [1, 4, 5]
    assert search.scan.next_index == 9  # the 4th feasible row (8) was processed too
    assert np.flatnonzero(search.take(feasible)).tolist() == [1, 20, 29]  # 20, 29, then round to 1
    assert search.scan.next_index == 5  # stopped at 4
    assert np.flatnonzero(search.take(feasible)).tolist() == [5, 8, 20]


def test_a_scan_that_finds_k_or_fewer_keeps_them_all_and_leaves_the_index():
    search = FeasibleSearch(30, SearchOptions(minimum_feasible_nodes=3, percentage_nodes_to_find=10),
                            NodeScan(7))
    feasible = mask(30, [2, 9, 25])
    assert search.take(feasible) is feasible
    assert search.scan.next_index == 7
    assert not search.take(mask(30, [])).any() and search.scan.next_index == 7


def test_small_clusters_are_not_limited_and_a_kept_index_wraps_to_the_cluster():
    search = FeasibleSearch(100, DEFAULTS, NodeScan(4321))
    assert not search.limited
    feasible = np.ones(100, dtype=bool)
    assert search.take(feasible) is feasible


def test_the_options_are_top_level_keys_of_the_configuration():
    conf = parse_conf({"actions": "allocate", "tiers": [], "minimum-feasible-nodes": 50,
                       "percentage_nodes_to_find": 20})
    assert conf.options == SearchOptions(minimum_feasible_nodes=50, percentage_nodes_to_find=20)
    assert conf.to_dict()["minimum-feasible-nodes"] == 50
    assert parse_conf(conf.to_dict()).options == conf.options
    with pytest.raises(ConfError, match="percentage-nodes-to-find must be a non-negative integer"):
        parse_conf({"actions": "allocate", "tiers": [], "percentage-nodes-to-find": "ten"})
    with pytest.raises(ConfError, match="minimum-feasible-nodes must be a non-negative integer"):
        parse_conf({"actions": "allocate", "tiers": [], "minimum-feasible-nodes": -1})


SCENARIO = """\
config:
  actions: allocate
  tiers: [{plugins: [{name: gang}]}]
  minimum-feasible-nodes: 50
options: %s
nodes: [{name: n1, allocatable: {cpu: "1", memory: 1Gi}}]
queues: [{name: default}]
"""


def test_scenario_options_override_the_configurations():
    sc = load_scenario(SCENARIO % "{percentage_nodes_to_find: 30}", filename="s.yaml")
    assert sc.conf.options == SearchOptions(minimum_feasible_nodes=50, percentage_nodes_to_find=30)


@pytest.mark.parametrize(("options", "message"), [
    ("{fastest: 1}", "s.yaml:5: options.fastest: unknown option fastest"),
    ("{minimum_feasible_nodes: many}",
     "s.yaml:5: options.minimum_feasible_nodes: minimum_feasible_nodes must be"),
])
def test_bad_scenario_options_name_the_line(options, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(SCENARIO % options, filename="s.yaml")
    assert str(err.value).startswith(message)
