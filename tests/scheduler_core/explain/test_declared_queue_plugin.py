"""The explanations find the session's queue plugin by what it declares, not by its name."""

from __future__ import annotations

from scheduler_core.explain.reason_figures import CloseFigures
from scheduler_core.framework.session import open_session
from scheduler_core.plugins.proportion.proportion import ProportionPlugin
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task
from tests.scheduler_core.listed import listed


class Shares(ProportionPlugin):
    """proportion under another name, measuring room against real capability."""

    name = "_t_shares"
    limit_figure = "real_capability"
    ceiling_figures = ("real_capability", "capability")


def test_close_figures_use_the_declared_queue_plugin():
    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")],
                    jobs=[job("j", queue="q", tasks=[task("t", cpu="1")])])
    with listed(Shares):
        ssn = open_session(snap, conf("allocate", [["gang", "_t_shares"]]))
    figures = CloseFigures(ssn)
    assert figures.plugin is ssn.plugins["_t_shares"]
    assert (figures.allocate_limit, figures.ceiling) == ("real_capability", ("real_capability", "capability"))
    assert figures.chain("q") == []  # figures are reported at close: none yet
