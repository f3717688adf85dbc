"""The one list of plugins (as upstream's plugins/factory.go): the registry is filled from it.

A new plugin is one import and one entry here; nothing else discovers plugins.
"""

from __future__ import annotations

from scheduler_core.framework.interface import Plugin
from scheduler_core.plugins.binpack.binpack import BinpackPlugin
from scheduler_core.plugins.capacity.capacity import CapacityPlugin
from scheduler_core.plugins.conformance.conformance import ConformancePlugin
from scheduler_core.plugins.drf.drf import DrfPlugin
from scheduler_core.plugins.gang.gang import GangPlugin
from scheduler_core.plugins.nodeorder.nodeorder import NodeOrderPlugin
from scheduler_core.plugins.overcommit.overcommit import OvercommitPlugin
from scheduler_core.plugins.predicates.predicates import PredicatesPlugin
from scheduler_core.plugins.priority.priority import PriorityPlugin
from scheduler_core.plugins.proportion.proportion import ProportionPlugin
from scheduler_core.plugins.rescheduling.rescheduling import ReschedulingPlugin
from scheduler_core.plugins.resourcequota.resourcequota import ResourceQuotaPlugin
from scheduler_core.plugins.sla.sla import SlaPlugin
from scheduler_core.plugins.usage.usage import UsagePlugin

# The one registration: the registry is filled from this list, each class under its `name`.
PLUGINS: tuple[type[Plugin], ...] = (
    BinpackPlugin,
    CapacityPlugin,
    ConformancePlugin,
    DrfPlugin,
    GangPlugin,
    NodeOrderPlugin,
    OvercommitPlugin,
    PredicatesPlugin,
    PriorityPlugin,
    ProportionPlugin,
    ReschedulingPlugin,
    ResourceQuotaPlugin,
    SlaPlugin,
    UsagePlugin,
)
