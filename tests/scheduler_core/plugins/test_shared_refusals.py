"""proportion's and capacity's `allocatable` build a queue's refusal once per request shape while
the queue's figures stand, and share it: through any random mix of submits, cancels,
completions, node changes and cycles, every recorded reason (code, message, plugin, details) and
every result equals what building each refusal afresh gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.session import Session
from scheduler_core.plugins.capacity.capacity import CapacityPlugin
from scheduler_core.plugins.proportion.proportion import ProportionPlugin
from tests.conftest import profiled
from tests.scheduler_core.framework.test_kept_state import CAPACITY, PROPORTION, QUEUES, STEP, Twin


class _Forget(dict):
    """A memo that keeps nothing: every refusal is built afresh."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def _recording(monkeypatch: pytest.MonkeyPatch, records: list) -> None:
    original = Session.record_reason

    def record(self: Session, job_uid: str, code: Any, message: str, plugin: str,
               details: dict | None = None) -> None:
        records.append((job_uid, code, message, plugin, details))
        original(self, job_uid, code, message, plugin, details)

    monkeypatch.setattr(Session, "record_reason", record)


def _run(conf: Any, steps: list, memo: bool) -> tuple[list[str], list]:
    records: list = []
    with pytest.MonkeyPatch.context() as mp:
        _recording(mp, records)
        if not memo:
            for cls in (ProportionPlugin, CapacityPlugin):
                opened = cls.on_session_open

                def on_open(self: Any, ssn: Session, _opened: Any = opened) -> None:
                    _opened(self, ssn)
                    self._refusals = _Forget()

                mp.setattr(cls, "on_session_open", on_open)
        twin, results = Twin(conf), []
        for op in steps:
            if op[0] == "cycle":
                results.append(twin.cycle(kept=True))
            else:
                twin.apply(op)
        results.append(twin.cycle(kept=True))
    return results, records


SUBMIT = st.tuples(st.just("submit"), st.sampled_from(QUEUES), st.integers(1, 4), st.integers(1, 3),
                   st.booleans())
# Backlogs of submits between cycles (several refusals of a queue in one session), mixed with
# the other steps.
BATCH = st.tuples(st.lists(SUBMIT, min_size=3, max_size=10), st.lists(STEP, max_size=4))


@settings(profiled(settings(max_examples=60)))
@given(st.sampled_from(["proportion", "capacity"]), st.lists(BATCH, min_size=1, max_size=3))
def test_shared_refusals_equal_fresh_ones(which, batches):
    steps = [op for submits, rest in batches for op in (*submits, *rest, ("cycle",))]
    conf = PROPORTION if which == "proportion" else CAPACITY
    shared, fresh = _run(conf, steps, True), _run(conf, steps, False)
    assert shared == fresh


def test_a_backlog_of_one_shape_builds_one_refusal(monkeypatch):
    built: list[str] = []
    import scheduler_core.plugins.proportion.proportion as proportion

    original = proportion.quota_message

    def counted(*args: Any) -> str:
        built.append(args[0])
        return original(*args)

    monkeypatch.setattr(proportion, "quota_message", counted)
    twin = Twin(PROPORTION)
    for _ in range(6):
        twin.apply(("submit", "a1", 3, 3, False))  # 9 cpu each: a1 deserves 4
    records: list = []
    _recording(monkeypatch, records)
    twin.cycle(kept=True)
    refused = [r for r in records if str(getattr(r[1], "value", r[1])) == "QueueOverDeserved"]
    assert len(refused) >= 2 and len(built) < len(refused)
    assert all(r[2] == refused[0][2] and r[4] == refused[0][4] for r in refused)
