"""schedweb's default scheduler configuration: Volcano's default tiers with hierarchical capacity.

Used when no SchedulerConfig is active, and activated by the demo. It differs from Volcano's own
default (`scheduler_core.framework.conf.DEFAULT_CONF`, flat `proportion`) in one plugin only:
`capacity` with `enableHierarchy: true` in proportion's place, so a parent queue's capability and
guarantee bound its whole subtree (issue 16, item 3). Flat proportion ignores the limits of
queues that hold no jobs, so a parent's capability would silently not hold. Volcano's default
stays one switch away: `manage.py scheduler_conf --activate volcano-default` (NAMED_CONFS).
"""

from __future__ import annotations

from scheduler_core.framework.conf import DEFAULT_CONF_YAML, SchedulerConf, parse_conf

# Volcano's default YAML with this one line replaced, so the two cannot drift apart elsewhere.
_PROPORTION = "      - name: proportion\n"
if DEFAULT_CONF_YAML.count(_PROPORTION) != 1:
    raise RuntimeError("Volcano's default configuration no longer lists proportion once")
SCHEDWEB_DEFAULT_CONF_YAML = DEFAULT_CONF_YAML.replace(
    _PROPORTION, "      - name: capacity\n        enableHierarchy: true\n")

_SCHEDWEB_DEFAULT_CONF: SchedulerConf = parse_conf(SCHEDWEB_DEFAULT_CONF_YAML)

# The configurations `manage.py scheduler_conf --activate NAME` knows by name: (YAML, comment).
NAMED_CONFS: dict[str, tuple[str, str]] = {
    "schedweb-default": (SCHEDWEB_DEFAULT_CONF_YAML,
                         "schedweb's default: Volcano's tiers with hierarchical capacity"),
    "volcano-default": (DEFAULT_CONF_YAML, "Volcano's default configuration (flat proportion)"),
}


def schedweb_default_conf() -> SchedulerConf:
    """The parsed default (shared: treat it as read-only, as scheduler_core's DEFAULT_CONF)."""
    return _SCHEDWEB_DEFAULT_CONF
