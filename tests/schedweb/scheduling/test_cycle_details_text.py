"""The cycle's JSON text of a reason's details: json.dumps's own text, shared parts dumped once."""

from __future__ import annotations

import json

from schedweb.scheduling.job_changes import details_text


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def test_the_text_is_json_dumps_text_and_a_shared_chain_is_dumped_once(monkeypatch):
    chain = [{"queue": "root", "headroom": {"cpu": 0.0, "memory": 1.5}, "capability": None},
             {"queue": "root.a", "headroom": {"nvidia.com/gpu": 2.0}, "note": "ünï \"q\"\n"}]
    first = {"queue_chain": chain, "check": "allocate", "need": {"cpu": 2}, "n": 3, "z": None}
    second = {"queue_chain": chain, "check": "enqueue", "insufficient": {"cpu": {"need": 2, "left": 0}}}
    memo: dict = {}
    calls: list[object] = []
    real = json.dumps

    def counting(value, **kw):
        calls.append(value)
        return real(value, **kw)

    monkeypatch.setattr(json, "dumps", counting)
    texts = [details_text(first, memo), details_text(second, memo)]
    monkeypatch.setattr(json, "dumps", real)
    assert texts == [_dumps(first), _dumps(second)]
    assert sum(value is chain for value in calls) == 1


def test_an_equal_chain_of_another_object_and_odd_keys_still_give_dumps_text():
    memo: dict = {}
    a = {"queue_chain": [{"queue": "q"}]}
    b = {"queue_chain": [{"queue": "q", "left": 1}]}
    assert details_text(a, memo) == _dumps(a)
    assert details_text(b, memo) == _dumps(b)  # another list: its own text, whatever the memo holds
    odd = {2: [1, 2], 1: "one"}  # not text keys: dumps itself (it sorts them as numbers)
    assert details_text(odd, memo) == _dumps(odd) == '{"1": "one", "2": [1, 2]}'
    assert details_text({}, memo) == "{}"


def test_every_kind_of_scalar_value_is_written_as_dumps_writes_it():
    class Text(str):
        pass

    scalars = ["plain", 'ünï "q"\n\x00\\', 0, -5, 10**30, 1.5, 1e300, -0.0, float("nan"), float("inf"),
               float("-inf"), None, True, False, Text("sub"), b"bytes"]
    details = {f"k{i:02}": value for i, value in enumerate(scalars)} | {"ключ": 1}
    assert details_text(details, {}) == _dumps(details)
