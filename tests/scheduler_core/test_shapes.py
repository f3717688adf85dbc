"""scheduler_core.shapes: Kubernetes shapes accepted as Kubernetes accepts them, everything else a
ShapeError whose path names the element (`str(err) == "path: message"`)."""

from __future__ import annotations

import pytest

from scheduler_core import shapes
from scheduler_core.model import TaskInfo
from scheduler_core.resources import Resource
from scheduler_core.shapes import ShapeError

NA, REQ, PREF = "nodeAffinity", shapes.REQUIRED, shapes.PREFERRED
A = f"a.{NA}.{REQ}"


def expr(key: str = "zone", operator: str = "In", values: object = ("a",)) -> dict:
    """One matchExpressions entry (values omitted when None)."""
    out: dict = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = list(values) if isinstance(values, tuple) else values
    return out


def required(*exprs: dict) -> dict:
    """An affinity with one required node selector term of `exprs`."""
    return {NA: {REQ: {"nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}}}


GOOD_AFFINITIES = [
    {},
    {NA: {}},
    required(expr(), expr("gpu", "Exists", None), expr("x", "DoesNotExist", []), expr("n", "Gt", ["8"])),
    {NA: {REQ: {"nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "In", ["n1"])]}]},
          PREF: [{"weight": 100, "preference": {"matchExpressions": [expr("zone", "NotIn", ["b"])]}}]}},
    {"podAntiAffinity": {REQ: [{"labelSelector": {"matchLabels": {"app": "web"}},
                                "topologyKey": "kubernetes.io/hostname", "namespaces": ["ns1"]}]},
     "podAffinity": {PREF: [{"weight": 1, "podAffinityTerm": {
         "labelSelector": {"matchExpressions": [expr("app", "In", ["db"])]}, "topologyKey": "zone"}}]}},
]


@pytest.mark.parametrize("affinity", GOOD_AFFINITIES)
def test_kubernetes_affinities_pass_unchanged(affinity):
    assert shapes.check_affinity(affinity, "a") is affinity


BAD_AFFINITIES = [
    # The poison inputs of issue 15, then one case per rule.
    ({NA: {REQ: "x"}}, f"{A}: expected a mapping"),
    ({NA: {REQ: {"nodeSelectorTerms": "x"}}}, f"{A}.nodeSelectorTerms: expected a list"),
    ({NA: {REQ: {"nodeSelectorTerms": [{"matchExpressions": "x"}]}}},
     f"{A}.nodeSelectorTerms[0].matchExpressions: expected a list"),
    (required(expr(values=5)), f"{A}.nodeSelectorTerms[0].matchExpressions[0].values: expected a list"),
    ({NA: [1]}, f"a.{NA}: expected a mapping"),
    ([], "a: expected a mapping"),
    ({"nodeAfinity": {}}, "a.nodeAfinity: unknown key (allowed: nodeAffinity, podAffinity, podAntiAffinity)"),
    ({NA: {REQ: {}}}, f"{A}.nodeSelectorTerms: required"),
    ({NA: {REQ: {"nodeSelectorTerms": []}}}, f"{A}.nodeSelectorTerms: must not be empty"),
    (required(expr(operator="Near")), f"{A}.nodeSelectorTerms[0].matchExpressions[0].operator: 'Near' is not "
                                      "one of In, NotIn, Exists, DoesNotExist, Gt, Lt"),
    (required(expr(values=[])), f"{A}.nodeSelectorTerms[0].matchExpressions[0].values: must be specified "
                                "when operator is In"),
    (required(expr(operator="Exists")), f"{A}.nodeSelectorTerms[0].matchExpressions[0].values: may not be "
                                        "specified when operator is Exists"),
    (required(expr(operator="Gt", values=["1", "2"])),
     f"{A}.nodeSelectorTerms[0].matchExpressions[0].values: must be a single value when operator is Gt"),
    (required(expr(operator="Lt", values=["ten"])),
     f"{A}.nodeSelectorTerms[0].matchExpressions[0].values[0]: 'ten' is not an integer"),
    (required(expr(values=[5])),
     f"{A}.nodeSelectorTerms[0].matchExpressions[0].values[0]: expected a string, got integer"),
    (required(expr(key="")), f"{A}.nodeSelectorTerms[0].matchExpressions[0].key: '' is not a qualified name: "
                             "an optional prefix (a DNS subdomain of at most 253 lower-case letters, digits, "
                             "'-' and '.') and '/', then at most 63 letters, digits, '-', '_' or '.', "
                             "starting and ending with a letter or digit"),
    ({NA: {REQ: {"nodeSelectorTerms": [{"matchFields": [expr("metadata.label")]}]}}},
     f"{A}.nodeSelectorTerms[0].matchFields[0].key: not a valid field selector key (only metadata.name)"),
    ({NA: {PREF: [{"weight": 0, "preference": {}}]}}, f"a.{NA}.{PREF}[0].weight: must be between 1 and 100, "
                                                        "got 0"),
    ({NA: {PREF: [{"weight": 5}]}}, f"a.{NA}.{PREF}[0].preference: required"),
    ({"podAffinity": {REQ: [{"labelSelector": {}}]}}, f"a.podAffinity.{REQ}[0].topologyKey: required"),
    ({"podAffinity": {REQ: [{"topologyKey": ""}]}}, f"a.podAffinity.{REQ}[0].topologyKey: must not be empty"),
    ({"podAntiAffinity": {REQ: [{"topologyKey": "z", "namespaces": ["Bad_NS"]}]}},
     f"a.podAntiAffinity.{REQ}[0].namespaces[0]: 'Bad_NS' is not a namespace (a DNS label)"),
    ({"podAffinity": {REQ: [{"topologyKey": "z", "labelSelector": {"matchExpressions": [
        expr("app", "Gt", ["1"])]}}]}},
     f"a.podAffinity.{REQ}[0].labelSelector.matchExpressions[0].operator: 'Gt' is not one of In, NotIn, "
     "Exists, DoesNotExist"),
    ({"podAffinity": {REQ: [{"topologyKey": "z", "labelSelector": {"matchLabels": {"app": "a b"}}}]}},
     f"a.podAffinity.{REQ}[0].labelSelector.matchLabels.app: 'a b' is not a valid label value: at most 63 "
     "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
    ({"podAffinity": {PREF: [{"weight": 101, "podAffinityTerm": {"topologyKey": "z"}}]}},
     f"a.podAffinity.{PREF}[0].weight: must be between 1 and 100, got 101"),
]


@pytest.mark.parametrize(("affinity", "error"), BAD_AFFINITIES)
def test_malformed_affinities_name_the_element(affinity, error):
    with pytest.raises(ShapeError) as info:
        shapes.check_affinity(affinity, "a")
    assert str(info.value) == error
    assert f"{info.value.path}: {info.value.message}" == error


@pytest.mark.parametrize(("tolerations", "error"), [
    ([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"},
      {"key": "k", "value": "v"}, {"key": "k", "effect": "NoExecute", "tolerationSeconds": 30}], None),
    ("x", "t: expected a list"),
    ([{"key": "k", "operator": "In"}], "t[0].operator: 'In' is not one of Equal, Exists"),
    ([{"value": "v"}], "t[0].operator: must be Exists when key is empty"),
    ([{"key": "k", "operator": "Exists", "value": "v"}], "t[0].value: must be empty when operator is Exists"),
    ([{"key": "k", "effect": "Never"}], "t[0].effect: 'Never' is not one of NoSchedule, PreferNoSchedule, "
                                        "NoExecute"),
    ([{"key": "k", "tolerationSeconds": 5}], "t[0].effect: must be NoExecute when tolerationSeconds is set"),
    ([{"key": "k", "color": "red"}], "t[0].color: unknown key (allowed: key, operator, value, effect, "
                                     "tolerationSeconds)"),
])
def test_tolerations(tolerations, error):
    if error is None:
        assert shapes.check_tolerations(tolerations, "t") == tolerations
        return
    with pytest.raises(ShapeError) as info:
        shapes.check_tolerations(tolerations, "t")
    assert str(info.value) == error


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}


@pytest.mark.parametrize(("constraints", "error"), [
    ([SPREAD, {**SPREAD, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": None,
               "labelSelector": {"matchLabels": {"app": "web"}}, "nodeAffinityPolicy": "Honor",
               "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["pod-template-hash"]},
      {**SPREAD, "topologyKey": "rack", "minDomains": 3}], None),
    ([{**SPREAD, "maxSkew": 0}], "s[0].maxSkew: must be between 1 and 9223372036854775807, got 0"),
    ([{**SPREAD, "whenUnsatisfiable": "Never"}],
     "s[0].whenUnsatisfiable: 'Never' is not one of DoNotSchedule, ScheduleAnyway"),
    ([SPREAD, SPREAD],
     "s[1]: duplicate constraint for topologyKey 'zone' and whenUnsatisfiable DoNotSchedule"),
    ([{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}],
     "s[0].minDomains: may only be set when whenUnsatisfiable is DoNotSchedule"),
    ([{**SPREAD, "nodeTaintsPolicy": "Maybe"}], "s[0].nodeTaintsPolicy: 'Maybe' is not one of Honor, Ignore"),
    ([{**SPREAD, "labelSelector": {"matchLabels": {"app": "x"}}, "matchLabelKeys": ["app"]}],
     "s[0].matchLabelKeys[0]: 'app' exists in both matchLabelKeys and labelSelector"),
    ([{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}], "s[0].topologyKey: required"),
])
def test_topology_spread_constraints(constraints, error):
    if error is None:
        assert shapes.check_topology_spread_constraints(constraints, "s") == constraints
        return
    with pytest.raises(ShapeError) as info:
        shapes.check_topology_spread_constraints(constraints, "s")
    assert str(info.value) == error


@pytest.mark.parametrize("name", ["cpu", "memory", "pods", "nvidia.com/gpu", "example.com/foo",
                                  "hugepages-2Mi", "ephemeral-storage"])
def test_resource_names_are_qualified_names(name):
    assert shapes.check_resource_name(name, "r") == name


@pytest.mark.parametrize("name", ["<b>x</b>", "", "a b", "-cpu", "Example.com/foo", "/gpu", "a/b/c",
                                  "x" * 64, "gpu\x00"])
def test_other_resource_names_are_refused(name):
    with pytest.raises(ShapeError) as info:
        shapes.check_resource_name(name, "r")
    assert info.value.path == "r"


@pytest.mark.parametrize(("labels", "error"), [
    ({"app": "web", "kubernetes.io/hostname": "n1", "empty": ""}, None),
    ({"app": "x" * 64}, f"l.app: '{'x' * 64}' is not a valid label value: at most 63 letters, digits, '-', "
                        "'_' or '.', starting and ending with a letter or digit"),
    ({"app": 5}, "l.app: expected a string, got integer"),
    ({"a b": "x"}, "l: 'a b' is not a qualified name: an optional prefix (a DNS subdomain of at most 253 "
                   "lower-case letters, digits, '-' and '.') and '/', then at most 63 letters, digits, '-', "
                   "'_' or '.', starting and ending with a letter or digit"),
    ("app=web", "l: expected a mapping"),
])
def test_labels_and_node_selectors(labels, error):
    for check in (shapes.check_labels, shapes.check_node_selector):
        if error is None:
            assert check(labels, "l") == labels
            continue
        with pytest.raises(ShapeError) as info:
            check(labels, "l")
        assert str(info.value) == error


@pytest.mark.parametrize(("text", "multiline", "error"), [
    ("plain text", False, None),
    ("two\nlines\twith tab", True, None),
    ("a\x00b", True, "f: null characters are not allowed"),
    ("two\nlines", False, "f: control character U+000A is not allowed"),
    ("bell\x07", True, "f: control character U+0007 is not allowed"),
    ("c1\x85", True, "f: control character U+0085 is not allowed"),
    ("del\x7f", True, "f: control character U+007F is not allowed"),
    ("lone \ud800", True, "f: unpaired surrogate U+D800 is not allowed"),
    ("emoji \U0001f600 é", False, None),
    (5, False, "f: expected a string, got integer"),
])
def test_text(text, multiline, error):
    if error is None:
        assert shapes.check_text(text, "f", multiline=multiline) == text
        return
    with pytest.raises(ShapeError) as info:
        shapes.check_text(text, "f", multiline=multiline)
    assert str(info.value) == error


def test_depth_is_checked_without_recursion():
    deep: object = "leaf"
    for _ in range(100_000):
        deep = {"a": [deep]}
    with pytest.raises(ShapeError) as info:
        shapes.check_depth(deep, "v")
    assert str(info.value) == "v" + ".a[0]" * 16 + ": nested deeper than 32 levels"
    assert shapes.check_depth({"a": [{"b": 1}]}, "v", max_depth=3) == {"a": [{"b": 1}]}
    with pytest.raises(ShapeError):
        shapes.check_json_text(deep, "v")


def test_json_text_names_the_key_or_value():
    with pytest.raises(ShapeError) as info:
        shapes.check_json_text({"a": {"b": ["ok", "bad\x00"]}}, "ann")
    assert str(info.value) == "ann.a.b[1]: null characters are not allowed"
    with pytest.raises(ShapeError) as info:
        shapes.check_json_text({"a": {"k\ud800": 1}}, "ann")
    assert str(info.value) == "ann.a: unpaired surrogate U+D800 is not allowed"


@pytest.mark.parametrize(("value", "error"), [
    (0, None), (3600, None), (366 * 86400, None), (None, None),
    (1e308, "d: must be between 0 and 3.16224e+07 seconds (366 days), got 1e+308"),
    (float("inf"), "d: must be between 0 and 3.16224e+07 seconds (366 days), got inf"),
    (float("nan"), "d: must be between 0 and 3.16224e+07 seconds (366 days), got nan"),
    (-1, "d: must be between 0 and 3.16224e+07 seconds (366 days), got -1"),
    (10**400, "d: must be between 0 and 3.16224e+07 seconds (366 days), got " + str(10**400)),
    ("1h", "d: expected a number of seconds, got string"),
])
def test_durations(value, error):
    if error is None:
        assert shapes.check_duration(value, "d") == (None if value is None else float(value))
        return
    with pytest.raises(ShapeError) as info:
        shapes.check_duration(value, "d")
    assert str(info.value) == error


def _task(**extra) -> TaskInfo:
    fields = {"uid": "ns/t", "name": "t", "namespace": "ns", "job_uid": "ns/j",
              "resreq": Resource(1000, 2**30)}
    return TaskInfo(**{**fields, **extra})


@pytest.mark.parametrize(("extra", "error"), [
    ({}, None),
    ({"affinity": required(expr()), "labels": {"app": "web"}, "duration": 60.0,
      "resreq": Resource(500, 0, {"nvidia.com/gpu": 1000})}, None),
    ({"affinity": {NA: {REQ: "x"}}}, f"affinity.{NA}.{REQ}: expected a mapping"),
    ({"tolerations": [{"value": "v"}]}, "tolerations[0].operator: must be Exists when key is empty"),
    ({"node_selector": {"zone": ["a"]}}, "node_selector.zone: expected a string, got list"),
    ({"labels": {"<b>": "x"}}, "labels: '<b>' is not a qualified name"),
    ({"topology_spread_constraints": [{"maxSkew": 1}]},
     "topology_spread_constraints[0].topologyKey: required"),
    ({"resreq": Resource(0, 0, {"<b>x</b>": 1000})}, "request.<b>x</b>: '<b>x</b>' is not a qualified name"),
    ({"resreq": Resource(float("inf"), 0)}, "request.cpu: inf is not a quantity between 0 and "
                                             "9223372036854775807 stored units"),
    ({"duration": 1e308}, "duration: must be between 0 and 3.16224e+07 seconds (366 days), got 1e+308"),
])
def test_task_shape_problem_screens_stored_tasks(extra, error):
    problem = shapes.task_shape_problem(_task(**extra))
    if error is None:
        assert problem is None
    else:
        assert problem is not None and str(problem).startswith(error), str(problem)
    prefixed = shapes.task_shape_problem(_task(**extra), prefix="tasks[3]")
    assert (prefixed is None) == (error is None)
    if prefixed is not None:
        assert prefixed.path.startswith("tasks[3].")
