"""db_bench's no-limit cases: the scenario's configuration with the feasible-node search off."""

from __future__ import annotations

from scheduler_core.bench.session_bench import NO_LIMIT
from scheduler_core.framework.conf import parse_conf
from schedweb.bench.db_bench import case_spec, limit_lines
from schedweb.scheduling.default_conf import schedweb_default_conf


def test_a_no_limit_case_is_schedwebs_default_with_every_node_searched():
    world, spec = case_spec("S", "steady", 1)
    assert spec is world.spec and "config" not in spec  # the site's default, the limit on
    _, off = case_spec("S", "steady" + NO_LIMIT, 1)
    conf = parse_conf(off["config"])
    assert conf.options.percentage_nodes_to_find == 100
    default = schedweb_default_conf()
    assert [[p.name for p in tier.plugins] for tier in conf.tiers] == [
        [p.name for p in tier.plugins] for tier in default.tiers]
    assert default.options.percentage_nodes_to_find == 0
    assert off["jobs"] == spec["jobs"] and off["nodes"] == spec["nodes"]


def test_a_scenario_with_its_own_configuration_keeps_it():
    world, _ = case_spec("S", "contention", 1)
    _, off = case_spec("S", "contention" + NO_LIMIT, 1)
    assert off["config"] == {**world.spec["config"], "percentage-nodes-to-find": 100}


def test_the_limit_lines_compare_each_case_with_its_no_limit_run():
    row = {"size": "L", "scenario": "fill", "schedule_ms_p50": 100.0, "cycle_ms_p50": 200.0,
           "cycle_ms_p99": 300.0, "cpu_ms_p50": 150.0, "placed_per_cycle": 10.0}
    off = {**row, "scenario": "fill" + NO_LIMIT, "schedule_ms_p50": 400.0, "cycle_ms_p50": 500.0,
           "cycle_ms_p99": 600.0, "cpu_ms_p50": 300.0}
    text = limit_lines([row, off], [("L", "fill")])
    assert ("- L fill: schedule p50 100.0 vs 400.0 (0.25x) ms; cycle p50 200.0 vs 500.0 (0.40x), "
            "p99 300.0 vs 600.0 (0.50x) ms; CPU p50 150.0 vs 300.0 (0.50x) ms; "
            "placed/cycle 10.0 vs 10.0") in text
