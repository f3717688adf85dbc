"""How plugin answers combine across tiers (docs/semantics.md section 4), as tables."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from scheduler_core.framework.callbacks import CallbackRegistry
from scheduler_core.framework.conf import PluginOption, Tier
from scheduler_core.framework.interface import ValidateResult


def registry(layout: list[list[str]], flags: dict[str, dict[str, bool]] | None = None) -> CallbackRegistry:
    """A registry whose tiers hold plugins named as in `layout` (switches per plugin name)."""
    flags = flags or {}
    reg = CallbackRegistry()
    reg._init_callbacks([Tier([PluginOption(n, flags=flags.get(n, {})) for n in tier]) for tier in layout])
    return reg


JOB = SimpleNamespace(uid="ns/j", created=0.0)


# tiers of votes -> combined answer
VOTES = [
    ([[]], True),  # nobody votes: yes
    ([[0, 0], [0]], True),  # all abstain: yes
    ([[1]], True),
    ([[-1]], False),
    ([[1, -1]], False),  # a reject in the same tier wins over a permit
    ([[1], [-1]], True),  # tier 1 permits: tier 2 is never asked
    ([[0], [-1]], False),  # tier 1 abstains: tier 2 rejects
    ([[0, 0], [0, 1]], True),
]


@pytest.mark.parametrize("kind", ["job_enqueueable", "job_pipelined"])
@pytest.mark.parametrize("votes,expected", VOTES)
def test_votes(kind, votes, expected):
    layout = [[f"p{t}{i}" for i in range(len(tier))] for t, tier in enumerate(votes)]
    reg = registry(layout)
    for t, tier in enumerate(votes):
        for i, v in enumerate(tier):
            getattr(reg, f"add_{kind}_fn")(f"p{t}{i}", lambda job, v=v: v)
    assert getattr(reg, kind)(JOB) is expected


def test_vote_switch_off_skips_plugin():
    reg = registry([["a", "b"]], {"a": {"enabledJobEnqueued": False}})
    reg.add_job_enqueueable_fn("a", lambda job: -1)
    reg.add_job_enqueueable_fn("b", lambda job: 0)
    assert reg.job_enqueueable(JOB) is True


# tiers of starving answers (None = plugin registers nothing) -> combined
STARVING = [
    ([[None]], False),  # no function anywhere: not starving
    ([[True]], True),
    ([[True, False]], False),  # all of the deciding tier must say yes
    ([[None], [True]], True),  # first tier has none: second decides
    ([[False], [True]], False),  # first tier with a function decides
    ([[True], [False]], True),
]


@pytest.mark.parametrize("answers,expected", STARVING)
def test_job_starving_first_tier_decides(answers, expected):
    layout = [[f"p{t}{i}" for i in range(len(tier))] for t, tier in enumerate(answers)]
    reg = registry(layout)
    for t, tier in enumerate(answers):
        for i, a in enumerate(tier):
            if a is not None:
                reg.add_job_starving_fn(f"p{t}{i}", lambda job, a=a: a)
    assert reg.job_starving(JOB) is expected


@pytest.mark.parametrize("query,answers,expected", [
    ("allocatable", [True, True], True),
    ("allocatable", [True, False], False),
    ("allocatable", [], True),
    ("preemptive", [False, True], False),
    ("job_ready", [True, True], True),
    ("job_ready", [False], False),
    ("overused", [False, False], False),
    ("overused", [False, True], True),
    ("overused", [], False),
])
def test_all_and_any(query, answers, expected):
    reg = registry([[f"p{i}" for i in range(len(answers))]])
    for i, a in enumerate(answers):
        getattr(reg, f"add_{query}_fn")(f"p{i}", lambda *args, a=a: a)
    args = (JOB,) if query == "job_ready" else (JOB, JOB) if query != "overused" else (JOB,)
    assert getattr(reg, query)(*args) is expected


@pytest.mark.parametrize("flag,query", [
    ("enabledAllocatable", "allocatable"),
    ("enablePreemptive", "preemptive"),
    ("enabledJobReady", "job_ready"),
    ("enabledOverused", "overused"),
])
def test_switch_off_ignores_plugin(flag, query):
    reg = registry([["p"]], {"p": {flag: False}})
    answer = query == "overused"  # the answer that would change the result if it counted
    getattr(reg, f"add_{query}_fn")("p", lambda *args: answer)
    args = (JOB,) if query in ("job_ready", "overused") else (JOB, JOB)
    assert getattr(reg, query)(*args) is (not answer)


def tasks(*names: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(uid=n) for n in names]


ALL = tasks("a", "b", "c", "d")


def pick(*names: str, vote: int = 1):
    return lambda actor, cands: ([t for n in names for t in cands if t.uid == n], vote)


ABSTAIN = pick(vote=0)

# tiers of victim functions -> victims
VICTIMS = [
    ([[pick("a", "b", "c"), pick("b", "c", "d")]], ["b", "c"]),  # intersection
    ([[pick("a", "b"), ABSTAIN]], ["a", "b"]),  # abstainers skipped
    ([[ABSTAIN], [pick("c")]], ["c"]),  # all abstain: next tier decides
    ([[pick("a")], [pick("b")]], ["a"]),  # first tier with an answer decides
    ([[pick(), pick("a")], [pick("b")]], []),  # an empty answer empties the tier, which decides
    ([[pick("a"), pick("b")], [pick("a")]], []),  # empty intersection still decides
    ([[ABSTAIN]], []),
    ([[pick("d", "b", "a"), pick("a", "b")]], ["b", "a"]),  # keeps the first answer's order
]


@pytest.mark.parametrize("kind", ["preemptable", "reclaimable"])
@pytest.mark.parametrize("fns,expected", VICTIMS)
def test_victim_selection(kind, fns, expected):
    layout = [[f"p{t}{i}" for i in range(len(tier))] for t, tier in enumerate(fns)]
    reg = registry(layout)
    for t, tier in enumerate(fns):
        for i, fn in enumerate(tier):
            getattr(reg, f"add_{kind}_fn")(f"p{t}{i}", fn)
    got = getattr(reg, kind)(SimpleNamespace(uid="x"), ALL)
    assert [v.uid for v in got] == expected


def test_victim_switch_off():
    reg = registry([["a"], ["b"]], {"a": {"enabledPreemptable": False}})
    reg.add_preemptable_fn("a", pick("a"))
    reg.add_preemptable_fn("b", pick("b"))
    assert [v.uid for v in reg.preemptable(SimpleNamespace(uid="x"), ALL)] == ["b"]


def test_victim_tasks_union_in_order():
    reg = registry([["a", "b"]])
    reg.add_victim_tasks_fn("a", lambda: tasks("x", "y"))
    reg.add_victim_tasks_fn("b", lambda: tasks("y", "z"))
    assert [t.uid for t in reg.victim_tasks()] == ["x", "y", "z"]


def item(name: str, created: float = 0.0, **kw) -> SimpleNamespace:
    return SimpleNamespace(uid=name, name=name, created=created, **kw)


@pytest.mark.parametrize("plugin_answers,lhs,rhs,expected", [
    ([], item("a"), item("b"), True),  # fallback: name
    ([], item("b", 1.0), item("a", 2.0), True),  # fallback: creation time first
    ([0, -1], item("b"), item("a"), True),  # first non-zero wins
    ([1, -1], item("a"), item("b"), False),
    ([0, 0], item("b"), item("a"), False),
])
@pytest.mark.parametrize("kind", ["job", "task", "queue"])
def test_order_first_nonzero_then_fallback(kind, plugin_answers, lhs, rhs, expected):
    reg = registry([[f"p{i}" for i in range(len(plugin_answers))]])
    for i, a in enumerate(plugin_answers):
        getattr(reg, f"add_{kind}_order_fn")(f"p{i}", lambda x, y, a=a: a)
    assert getattr(reg, f"{kind}_order_fn")(lhs, rhs) is expected


def test_order_switch_and_tiers():
    reg = registry([["a"], ["b"]], {"a": {"enabledJobOrder": False}})
    reg.add_job_order_fn("a", lambda x, y: 1)
    reg.add_job_order_fn("b", lambda x, y: -1)
    assert reg.job_order_fn(item("z"), item("a")) is True


def test_victim_queue_order_gets_preemptor_queue():
    reg = registry([["p"]])
    seen = []
    reg.add_victim_queue_order_fn("p", lambda x, y, pq: seen.append(pq.name) or -1)
    assert reg.victim_queue_order_fn(item("b"), item("a"), item("mine")) is True
    assert seen == ["mine"]


def test_namespace_order_fallback_by_name():
    reg = registry([["p"]])
    assert reg.namespace_order_fn("a", "b") is True
    reg.add_namespace_order_fn("p", lambda x, y: 1)
    assert reg.namespace_order_fn("a", "b") is False


def test_job_valid_returns_first_failure_and_ignores_switches():
    reg = registry([["a", "b", "c"]], {"b": {"enabledJobOrder": False}})
    reg.add_job_valid_fn("a", lambda job: None)
    reg.add_job_valid_fn("b", lambda job: ValidateResult(False, "NotEnoughPods", "1/2 pods"))
    reg.add_job_valid_fn("c", lambda job: ValidateResult(False, "Other", ""))
    assert reg.job_valid(JOB) == ValidateResult(False, "NotEnoughPods", "1/2 pods")
    ok = registry([["a"]])
    ok.add_job_valid_fn("a", lambda job: ValidateResult(True))
    assert ok.job_valid(JOB) is None


def test_job_enqueued_calls_every_enabled_plugin_in_order():
    reg = registry([["a"], ["b", "c"]], {"c": {"enabledJobEnqueued": False}})
    calls = []
    for n in "abc":
        reg.add_job_enqueued_fn(n, lambda job, n=n: calls.append(n))
    reg.job_enqueued(JOB)
    assert calls == ["a", "b"]


def test_unconfigured_plugin_callbacks_are_ignored():
    reg = registry([["a"]])
    reg.add_allocatable_fn("ghost", lambda q, t: False)
    assert reg.allocatable(JOB, JOB) is True


# -- companions: declared with the registration they accompany -------------------------------------
def _keep(job) -> bool:
    return True


@pytest.mark.parametrize("kind", ["preemptable", "reclaimable"])
@pytest.mark.parametrize("layout,filtered,expected", [
    ([["a", "b"]], {"a"}, ["a"]),  # one filter in the deciding tier bounds its intersection
    ([["a", "b"]], set(), None),  # no filter: no bound
    ([["a"], ["b"]], {"b"}, None),  # the first tier with callbacks decides: unbounded
    ([["a"], ["b"]], {"a", "b"}, ["a"]),
])
def test_victim_job_filters_follow_the_deciding_tier(kind, layout, filtered, expected):
    reg = registry(layout)
    filters = {name: (lambda job, name=name: name == "a") for name in filtered}
    for name in ("a", "b"):
        getattr(reg, f"add_{kind}_fn")(name, pick("a"), victim_job_filter=filters.get(name))
    got = reg.victim_job_filters(kind)
    assert got == (None if expected is None else [filters[n] for n in expected])


def test_a_re_registration_drops_the_old_companions():
    reg = registry([["p"]])
    reg.add_reclaimable_fn("p", pick("a"), victim_job_filter=_keep)
    reg.add_job_order_fn("p", lambda x, y: 0, key_fn=lambda j: j.created)
    assert reg.victim_job_filters("reclaimable") == [_keep]
    assert reg.job_order_key() is not None
    reg.add_reclaimable_fn("p", pick("a"))
    reg.add_job_order_fn("p", lambda x, y: 0)
    assert reg.victim_job_filters("reclaimable") is None
    assert reg.job_order_key() is None


def test_add_victim_job_filter_fn_declares_after_the_fact():
    reg = registry([["p"]])
    reg.add_preemptable_fn("p", pick("a"))
    reg.add_victim_job_filter_fn("preemptable", "p", _keep)
    assert reg.victim_job_filters("preemptable") == [_keep]
    assert reg.companion("preemptable", "p", "victim_job_filter") is _keep


def test_companion_lookup():
    reg = registry([["p"]])
    fn, row_fn = (lambda t, table, mask: None), (lambda t, row: 0.0)
    reg.add_node_order_fn("p", fn, row_fn=row_fn)
    reg.add_predicate_fn("p", lambda t, table: [], static=True)
    assert reg.companion("node_order", "p", "row_fn") is row_fn
    assert reg.companion("node_order", "p", "signature") is None
    assert reg.companion("predicate", "p", "static") is True
    assert reg.companion("batch_node_order", "p", "row_fn") is None  # nothing registered
    assert reg.companion("job_ready", "p", "key_fn") is None  # a kind without companions
    assert reg.row_score_fns() == [("p", row_fn)]
