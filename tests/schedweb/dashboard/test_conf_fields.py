"""Which queue fields the active configuration ignores (issue 16, item 3): the one function for
every combination of queue plugins and flags, and the hints on the queue page and edit form."""

from __future__ import annotations

import re

import pytest

from scheduler_core.framework.conf import DEFAULT_CONF_YAML, parse_conf
from schedweb.dashboard.conf_fields import ignored_fields
from schedweb.scheduling.default_conf import SCHEDWEB_DEFAULT_CONF_YAML

SHARES = ["weight", "capability", "deserved", "guarantee"]
TIERS = """
tiers:
  - plugins:
      - name: priority
      - name: gang
  - plugins:
      - name: predicates
{queue_plugins}"""


def _conf(queue_plugins: str, actions: str = "enqueue, allocate, backfill"):
    return parse_conf(f'actions: "{actions}"' + TIERS.format(queue_plugins=queue_plugins))


PROPORTION = "      - name: proportion\n"
CAPACITY = "      - name: capacity\n"
HIERARCHY = "      - name: capacity\n        enableHierarchy: true\n"


@pytest.mark.parametrize(("plugins", "is_leaf", "ignored"), [
    # Flat proportion: a parent plays no part; a leaf's deserved is computed from the weights.
    (PROPORTION, False, SHARES),
    (PROPORTION, True, ["deserved"]),
    # Capacity without hierarchy: flat too (parents play no part), and weight never counts.
    (CAPACITY, False, SHARES),
    (CAPACITY, True, ["weight"]),
    # Hierarchical capacity: every level's limits hold; only weight is ignored, anywhere.
    (HIERARCHY, False, ["weight"]),
    (HIERARCHY, True, ["weight"]),
    # Both plugins: ignored only when both ignore it.
    (PROPORTION + HIERARCHY, False, ["weight"]),  # neither uses a parent's weight
    (PROPORTION + CAPACITY, False, SHARES),
    (PROPORTION + CAPACITY, True, []),
    # No queue plugin: nothing about a queue's share is enforced.
    ("", True, ["weight", "priority", "capability", "deserved", "guarantee"]),
    ("", False, ["weight", "priority", "capability", "deserved", "guarantee"]),
])
def test_ignored_fields_for_each_combination(plugins, is_leaf, ignored):
    with_reclaim = ignored_fields(_conf(plugins, "enqueue, allocate, reclaim, backfill"), is_leaf=is_leaf)
    assert sorted(with_reclaim) == sorted(ignored)
    # Without a reclaim action nothing is reclaimed: reclaimable is ignored too.
    assert sorted(ignored_fields(_conf(plugins), is_leaf=is_leaf)) == sorted([*ignored, "reclaimable"])


def test_the_sentences_name_the_plugin_and_the_field():
    why = ignored_fields(parse_conf(DEFAULT_CONF_YAML), is_leaf=False)
    assert why["capability"] == (
        "The active configuration uses the flat proportion plugin, which shares among the queues that hold "
        "jobs: a parent queue's capability has no effect.")
    assert ignored_fields(parse_conf(DEFAULT_CONF_YAML), is_leaf=True)["deserved"] == (
        "The active configuration uses the proportion plugin, which computes deserved from the weights: "
        "the configured deserved has no effect.")
    assert ignored_fields(parse_conf(SCHEDWEB_DEFAULT_CONF_YAML), is_leaf=True) == {
        "weight": "The active configuration uses the capacity plugin, which shares by deserved: weight has "
                  "no effect.",
        "reclaimable": "The active configuration runs no reclaim action: nothing is reclaimed from any "
                       "queue, reclaimable or not."}


def _hints(html: str, marker: str, end: str) -> list[str]:
    part = html[html.index(marker):]
    return re.findall(r'data-ignored="([^"]+)"', part[:part.index(end)])


@pytest.mark.parametrize(("conf", "queue", "hinted"), [
    # In the page's order: weight, priority, reclaimable, capability, deserved, guarantee.
    ("schedweb-default", "research", ["weight", "reclaimable"]),
    ("schedweb-default", "vision", ["weight", "reclaimable"]),
    ("volcano-default", "research", ["weight", "reclaimable", "capability", "deserved", "guarantee"]),
    ("volcano-default", "vision", ["reclaimable", "deserved"]),
])
def test_queue_page_and_edit_form_say_what_is_ignored(demo, client_as, conf, queue, hinted):
    from schedweb.core import services
    from schedweb.scheduling.default_conf import NAMED_CONFS

    services.scheduler_config_activate(yaml=NAMED_CONFS[conf][0])
    html = client_as(demo["lead"]).get(f"/queues/{queue}/").content.decode()
    assert _hints(html, 'id="queue-settings"', "</table>") == hinted
    assert _hints(html, 'id="queue-edit-form"', "</form>") == hinted
