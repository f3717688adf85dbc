"""Resource vector and Kubernetes quantity parser (Volcano's `api/resource_info.go`).

Stored units: `milli_cpu` (1 core = 1000), `memory` bytes, `scalars[name]` milli-units
(1 GPU = 1000), `max_task_num` from `pods` (never part of arithmetic or comparisons).
Comparisons use the tolerance `MIN_RESOURCE` and a `DimensionDefault` for scalar dimensions
present on one side only: `Zero` (missing = 0) or `Infinity` (missing = unlimited).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Decimal
from enum import IntEnum
from functools import lru_cache
from typing import Any

__all__ = [
    "MIN_RESOURCE", "DimensionDefault", "Zero", "Infinity", "QuantityError", "ResourceError",
    "Resource", "parse_quantity", "admit_quantity", "is_extended_resource", "exceeded_part", "share",
    "max_resource", "min_resource",
]

MIN_RESOURCE = 0.1  # float comparison tolerance in stored units (Volcano's minResource)


class DimensionDefault(IntEnum):
    """Value of a scalar dimension that one side of a comparison lacks."""

    ZERO = 0
    INFINITY = -1


Zero = DimensionDefault.ZERO
Infinity = DimensionDefault.INFINITY


class QuantityError(ValueError):
    """A quantity that is not a valid (non-negative) Kubernetes quantity; names the bad text."""


class ResourceError(ValueError):
    """`Resource.sub` would make a dimension negative (Volcano asserts here)."""


# -- quantities ---------------------------------------------------------------------------------

_SUFFIX = {
    "": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"),
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
# Kubernetes' grammar: <signedNumber>(<binarySI> | <decimalSI> | e<signedNumber>)?. "1E" is exa,
# "1E3" an exponent. ASCII digits only (no "1_000", no unicode digits).
_QUANTITY = re.compile(
    r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?")
_GRAMMAR = "a number with an optional suffix (n u m k M G T P E Ki Mi Gi Ti Pi Ei) or exponent (1e3)"


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Decimal:
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise QuantityError(f"invalid quantity {text!r}: expected {_GRAMMAR}")
    sign, number, exponent, suffix = m.groups()
    value = Decimal(number)
    if exponent is not None:
        # Bounded so the value stays a finite float (Decimal would trap far beyond it anyway).
        if abs(int(exponent)) > 400 or not math.isfinite(float(value.scaleb(int(exponent)))):
            raise QuantityError(f"invalid quantity {text!r}: out of range")
        value = value.scaleb(int(exponent))
    else:
        value *= _SUFFIX[suffix or ""]
    return -value if sign == "-" else value


def _to_decimal(value: Any, allow_negative: bool) -> Decimal:
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}: expected a number or a quantity string")
    if isinstance(value, int):
        dec = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}: not a finite number")
        dec = Decimal(repr(value))
    elif isinstance(value, str):
        dec = _parse_text(value)
    else:
        raise QuantityError(f"invalid quantity {value!r}: expected a number or a quantity string")
    if dec < 0 and not allow_negative:
        raise QuantityError(f"negative quantity {value!r} is not allowed")
    return dec


def parse_quantity(value: str | int | float, allow_negative: bool = False) -> float:
    """Kubernetes quantity ("500m", "1.5", "4Gi", "2G", "1e3") or number -> float in its unit.

    "1G" is 10^9 and "1Gi" is 2^30. Raises QuantityError naming the text for anything else,
    and for negative values unless `allow_negative`.
    """
    return float(_to_decimal(value, allow_negative))


# Kubernetes keeps a quantity as an int64 of its smallest unit (milli-cores, bytes, milli-units):
# beyond that, in stored units, a value is refused (it would become inf or lose all precision).
MAX_STORED_QUANTITY = 2**63 - 1
_MAX_STORED = Decimal(MAX_STORED_QUANTITY)


def stored_factor(name: str) -> int:
    """Stored units per input unit: 1000 for cpu and scalars (milli), 1 for memory and pods."""
    return 1 if name in ("memory", "pods") else 1000


def check_stored(name: str, value: Any, allow_negative: bool = False) -> float:
    """Parse `value` as a quantity of resource `name` and return it in stored units; QuantityError
    (naming `name`) unless it is finite and at most MAX_STORED_QUANTITY in stored units."""
    try:
        return _scaled(_to_decimal(value, allow_negative), stored_factor(name))
    except QuantityError as exc:
        raise QuantityError(f"{name}: {exc}") from None


def _scaled(dec: Decimal, factor: int) -> float:
    # Exact scaling in Decimal, then one rounding to float. Unlike Quantity.MilliValue() we do
    # not round sub-milli fractions up here (admit_quantity does, at the door): tests of the 0.1
    # tolerance need "2000.05m" to stay 2000.05.
    return _bounded(dec * factor, factor, dec)


def _bounded(scaled: Decimal, factor: int, dec: Decimal) -> float:
    # The float stored, not only the exact amount, stays within int64: 2^63-1 itself becomes
    # 2^63 as a float, one past it, so the largest amount kept is the largest float below.
    stored = float(scaled)
    if abs(stored) > MAX_STORED_QUANTITY:
        unit = "milli-units" if factor == 1000 else "units"
        raise QuantityError(f"quantity {dec:g} is out of range: above {MAX_STORED_QUANTITY} {unit}")
    return stored


def is_extended_resource(name: str) -> bool:
    """Kubernetes' extended resources (`nvidia.com/gpu`): a domain-prefixed name outside
    `kubernetes.io/`. Their amounts are whole numbers; cpu, memory and other native names are not."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def admit_quantity(name: str, value: Any, allow_negative: bool = False, *,
                   whole_extended: bool = True) -> float:
    """`value` of resource `name` in stored units as Kubernetes admits it: rounded up to the
    smallest unit (1m of cpu, a byte of memory, a milli-unit of other resources: cpu "0.0001" is
    1m), a whole number for an extended resource (as Kubernetes requires of pods and nodes;
    `whole_extended=False` for queue shares, which Volcano does not constrain), within int64 once
    stored (QuantityError naming `name` otherwise). `pods` is a count, checked by its caller."""
    try:
        dec = _to_decimal(value, allow_negative)
        factor = stored_factor(name)
        if name == "pods":
            return _scaled(dec, factor)
        units = (dec * factor).to_integral_value(rounding=ROUND_CEILING)
        stored = _bounded(units, factor, dec)  # first: `%` of a huge Decimal is an error of its own
        if whole_extended and is_extended_resource(name) and units % 1000:
            raise QuantityError(f"extended resource quantities are whole numbers, got {value!r}")
        return stored
    except QuantityError as exc:
        raise QuantityError(f"{name}: {exc}") from None


def _default_value(default: DimensionDefault) -> float:
    return math.inf if default == Infinity else 0.0


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


# -- Resource -----------------------------------------------------------------------------------


class Resource:
    """Mutable resource vector; `add`/`sub`/`multi`/... modify in place and return self."""

    __slots__ = ("milli_cpu", "memory", "scalars", "max_task_num")

    def __init__(self, milli_cpu: float = 0.0, memory: float = 0.0,
                 scalars: Mapping[str, float] | None = None, max_task_num: int = 0) -> None:
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = {k: float(v) for k, v in scalars.items()} if scalars else {}
        self.max_task_num = int(max_task_num)

    # -- constructors and conversions -----------------------------------------------------------
    @classmethod
    def empty(cls) -> Resource:
        """All dimensions zero (Volcano's EmptyResource)."""
        return cls()

    @classmethod
    def from_quantities(cls, mapping: Mapping[str, Any] | None) -> Resource:
        """From Kubernetes quantities: `cpu`, `memory`, `pods`, any other key is a scalar.

        cpu -> milli, memory -> bytes, scalars -> milli-units, pods -> max_task_num
        (rounded up to a whole count). Raises QuantityError naming the key and the bad text.
        """
        r = cls()
        for name, raw in (mapping or {}).items():
            try:
                dec = _to_decimal(raw, allow_negative=False)
            except QuantityError as exc:
                raise QuantityError(f"{name}: {exc}") from None
            if name == "cpu":
                r.milli_cpu += _scaled(dec, 1000)
            elif name == "memory":
                r.memory += _scaled(dec, 1)
            elif name == "pods":
                r.max_task_num += math.ceil(dec)
            else:
                r.scalars[name] = r.scalars.get(name, 0.0) + _scaled(dec, 1000)
        return r

    @classmethod
    def from_canonical(cls, data: Mapping[str, float] | None) -> Resource:
        """From stored units `{"cpu": milli, "memory": bytes, "<scalar>": milli, "pods": n}`."""
        r = cls()
        for name, value in (data or {}).items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise QuantityError(f"{name}: invalid stored value {value!r}")
            if name == "cpu":
                r.milli_cpu = float(value)
            elif name == "memory":
                r.memory = float(value)
            elif name == "pods":
                r.max_task_num = int(value)
            else:
                r.scalars[name] = float(value)
        return r

    def to_canonical(self) -> dict[str, float]:
        """Stored units: `{"cpu": milli, "memory": bytes, "<scalar>": milli}` (no pods)."""
        out = {"cpu": self.milli_cpu, "memory": self.memory}
        for name in sorted(self.scalars):
            out[name] = self.scalars[name]
        return out

    def to_quantities(self) -> dict[str, float]:
        """Output units: cpu in cores, memory in bytes, scalars in their own units (no pods)."""
        out = {"cpu": self.milli_cpu / 1000, "memory": self.memory}
        for name in sorted(self.scalars):
            out[name] = self.scalars[name] / 1000
        return out

    def clone(self) -> Resource:
        """Deep copy (the scalars dict is copied)."""
        r = Resource.__new__(Resource)
        r.milli_cpu, r.memory, r.max_task_num = self.milli_cpu, self.memory, self.max_task_num
        r.scalars = self.scalars.copy()
        return r

    def __repr__(self) -> str:
        extra = "".join(f", {k} {v:.2f}" for k, v in sorted(self.scalars.items()))
        return f"<cpu {self.milli_cpu:.2f}, memory {self.memory:.2f}{extra}>"

    def __eq__(self, other: object) -> bool:
        """Exact equality of cpu, memory and scalars (missing scalar = 0); see `equal` for tolerance."""
        if not isinstance(other, Resource):
            return NotImplemented
        if self.milli_cpu != other.milli_cpu or self.memory != other.memory:
            return False
        names = self.scalars.keys() | other.scalars.keys()
        return all(self.scalars.get(n, 0.0) == other.scalars.get(n, 0.0) for n in names)

    __hash__ = None  # type: ignore[assignment]  # mutable

    # -- accessors ------------------------------------------------------------------------------
    def get(self, name: str) -> float:
        """Value of one dimension by name (`cpu`, `memory` or a scalar; missing scalar = 0)."""
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        return self.scalars.get(name, 0.0)

    def resource_names(self) -> list[str]:
        """Dimensions holding at least MIN_RESOURCE: cpu, memory, then scalars sorted."""
        names = [n for n, v in (("cpu", self.milli_cpu), ("memory", self.memory)) if v >= MIN_RESOURCE]
        names.extend(n for n in sorted(self.scalars) if self.scalars[n] >= MIN_RESOURCE)
        return names

    def is_empty(self) -> bool:
        """Every dimension below MIN_RESOURCE (pods ignored): a best-effort request."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for v in self.scalars.values())

    def is_zero(self, name: str) -> bool:
        """The named dimension is below MIN_RESOURCE (a missing scalar is zero)."""
        return self.get(name) < MIN_RESOURCE

    def _pairs(self, rr: Resource, default: DimensionDefault) -> Iterable[tuple[str, float, float]]:
        # (name, left, right) for every scalar of either side, missing side = default.
        if not self.scalars and not rr.scalars:
            return ()
        d = _default_value(default)
        ls, rs = self.scalars, rr.scalars
        return [(n, ls.get(n, d), rs.get(n, d)) for n in sorted(ls.keys() | rs.keys())]

    # -- arithmetic (in place) ------------------------------------------------------------------
    def add(self, rr: Resource) -> Resource:
        """Per-dimension sum (max_task_num untouched)."""
        self.milli_cpu += rr.milli_cpu
        self.memory += rr.memory
        if rr.scalars:
            s = self.scalars
            for name, v in rr.scalars.items():
                s[name] = s.get(name, 0.0) + v
        return self

    def sub_without_assert(self, rr: Resource) -> Resource:
        """Per-dimension difference; may go negative (Volcano's SubWithoutAssert).

        Unlike Volcano's `sub`, a scalar missing on the left is subtracted too (Zero default).
        """
        self.milli_cpu -= rr.milli_cpu
        self.memory -= rr.memory
        if rr.scalars:
            s = self.scalars
            for name, v in rr.scalars.items():
                s[name] = s.get(name, 0.0) - v
        return self

    def sub(self, rr: Resource) -> Resource:
        """Per-dimension difference; raises ResourceError unless `rr.less_equal(self, Zero)`."""
        if not rr.less_equal(self, Zero):
            raise ResourceError(f"resource is not sufficient to do operation: {self!r} sub {rr!r}")
        return self.sub_without_assert(rr)

    def multi(self, ratio: float) -> Resource:
        """Every dimension times `ratio`."""
        self.milli_cpu *= ratio
        self.memory *= ratio
        for name in self.scalars:
            self.scalars[name] *= ratio
        return self

    def set_max_resource(self, rr: Resource) -> Resource:
        """Per-dimension max with rr (scalars missing here take rr's value)."""
        self.milli_cpu = max(self.milli_cpu, rr.milli_cpu)
        self.memory = max(self.memory, rr.memory)
        for name, v in rr.scalars.items():
            if name not in self.scalars or v > self.scalars[name]:
                self.scalars[name] = v
        return self

    def fit_delta(self, rr: Resource) -> Resource:
        """Remaining capacity after requesting rr; a negative dimension is insufficient.

        Only requested (> 0) dimensions change, each by `request + MIN_RESOURCE` (Volcano).
        """
        if rr.milli_cpu > 0:
            self.milli_cpu -= rr.milli_cpu + MIN_RESOURCE
        if rr.memory > 0:
            self.memory -= rr.memory + MIN_RESOURCE
        for name, v in rr.scalars.items():
            if v > 0:
                self.scalars[name] = self.scalars.get(name, 0.0) - (v + MIN_RESOURCE)
        return self

    def add_scalar(self, name: str, value: float) -> Resource:
        """Add `value` (stored units) to one scalar dimension, creating it if missing."""
        self.scalars[name] = self.scalars.get(name, 0.0) + value
        return self

    def set_scalar(self, name: str, value: float) -> Resource:
        """Set one scalar dimension (stored units)."""
        self.scalars[name] = float(value)
        return self

    def min_dimension_resource(self, rr: Resource, default: DimensionDefault) -> Resource:
        """Per-dimension min with rr, in place; a scalar rr lacks: kept (Infinity) or 0 (Zero)."""
        self.milli_cpu = min(self.milli_cpu, rr.milli_cpu)
        self.memory = min(self.memory, rr.memory)
        for name, v in self.scalars.items():
            other = rr.scalars.get(name)
            if other is not None:
                self.scalars[name] = min(v, other)
            elif default == Zero:
                self.scalars[name] = 0.0
        return self

    def diff(self, rr: Resource, default: DimensionDefault) -> tuple[Resource, Resource]:
        """(increased, decreased) of self relative to rr: `rr + increased - decreased == self`.

        With Infinity, a dimension missing on one side differs by `math.inf` (Volcano's -1 mark).
        """
        inc, dec = Resource(), Resource()
        if self.milli_cpu > rr.milli_cpu:
            inc.milli_cpu = self.milli_cpu - rr.milli_cpu
        else:
            dec.milli_cpu = rr.milli_cpu - self.milli_cpu
        if self.memory > rr.memory:
            inc.memory = self.memory - rr.memory
        else:
            dec.memory = rr.memory - self.memory
        for name, left, right in self._pairs(rr, default):
            if left == math.inf:
                inc.scalars[name] = math.inf
            elif right == math.inf:
                dec.scalars[name] = math.inf
            elif left > right:
                inc.scalars[name] = left - right
            else:
                dec.scalars[name] = right - left
        return inc, dec

    # -- comparisons ----------------------------------------------------------------------------
    def less(self, rr: Resource, default: DimensionDefault) -> bool:
        """Every dimension strictly less than rr's (no tolerance)."""
        if not (self.milli_cpu < rr.milli_cpu and self.memory < rr.memory):
            return False
        return all(right == math.inf or left < right for _, left, right in self._pairs(rr, default))

    def less_equal(self, rr: Resource, default: DimensionDefault) -> bool:
        """Every dimension <= rr's within MIN_RESOURCE (e.g. `request.less_equal(idle, Zero)`)."""
        if not (_le(self.milli_cpu, rr.milli_cpu) and _le(self.memory, rr.memory)):
            return False
        return all(right == math.inf or (left != math.inf and _le(left, right))
                   for _, left, right in self._pairs(rr, default))

    def less_partly(self, rr: Resource, default: DimensionDefault) -> bool:
        """Some dimension strictly less than rr's."""
        if self.milli_cpu < rr.milli_cpu or self.memory < rr.memory:
            return True
        return any(left != math.inf and left < right for _, left, right in self._pairs(rr, default))

    def less_equal_partly(self, rr: Resource, default: DimensionDefault) -> bool:
        """Some dimension <= rr's within MIN_RESOURCE."""
        if _le(self.milli_cpu, rr.milli_cpu) or _le(self.memory, rr.memory):
            return True
        return any(left != math.inf and (right == math.inf or _le(left, right))
                   for _, left, right in self._pairs(rr, default))

    def greater_partly(self, rr: Resource, default: DimensionDefault) -> bool:
        """Some dimension above rr's beyond MIN_RESOURCE.

        Zero: the negation of `less_equal`. Infinity: only the scalars `self` has count (one
        missing on rr is unlimited, one present only on rr is ignored, as in Volcano).
        """
        if default == Infinity and any(n not in self.scalars for n in rr.scalars):
            kept = {n: v for n, v in rr.scalars.items() if n in self.scalars}
            trimmed = Resource(rr.milli_cpu, rr.memory, kept)
            return not self.less_equal(trimmed, default)
        return not self.less_equal(rr, default)

    def equal(self, rr: Resource, default: DimensionDefault) -> bool:
        """Every dimension equal within MIN_RESOURCE."""
        if abs(self.milli_cpu - rr.milli_cpu) >= MIN_RESOURCE or abs(self.memory - rr.memory) >= MIN_RESOURCE:
            return False
        return all(left == right or abs(left - right) < MIN_RESOURCE
                   for _, left, right in self._pairs(rr, default))

    def less_equal_with_resources_name(self, rr: Resource,
                                       default: DimensionDefault) -> tuple[bool, list[str]]:
        """`less_equal` plus the names of the dimensions that exceed rr (cpu, memory, scalars sorted).

        Only the scalars of `self` are compared (Volcano walks the left side's scalars): one
        present only on rr never fails, whatever the default.
        """
        names = []
        if not _le(self.milli_cpu, rr.milli_cpu):
            names.append("cpu")
        if not _le(self.memory, rr.memory):
            names.append("memory")
        d = _default_value(default)
        for name in sorted(self.scalars):
            left, right = self.scalars[name], rr.scalars.get(name, d)
            if right != math.inf and not _le(left, right):
                names.append(name)
        return not names, names

    def _requested(self, rr: Resource, req: Resource) -> list[tuple[str, float, float]]:
        # Dimensions req asks for (> 0); scalars missing on either side count as 0 (Zero).
        dims = []
        if req.milli_cpu > 0:
            dims.append(("cpu", self.milli_cpu, rr.milli_cpu))
        if req.memory > 0:
            dims.append(("memory", self.memory, rr.memory))
        for name in sorted(req.scalars):
            if req.scalars[name] > 0:
                dims.append((name, self.scalars.get(name, 0.0), rr.scalars.get(name, 0.0)))
        return dims

    def less_equal_with_dimension_and_resources_name(self, rr: Resource,
                                                     req: Resource | None) -> tuple[bool, list[str]]:
        """<= rr in the dimensions `req` requests (missing scalar = 0), with the failing names.

        `req` None compares every dimension with the Zero default (Volcano's nil request).
        """
        if req is None:
            return self.less_equal_with_resources_name(rr, Zero)
        names = [n for n, left, right in self._requested(rr, req) if not _le(left, right)]
        return not names, names

    def less_equal_with_dimension(self, rr: Resource, req: Resource | None) -> bool:
        """<= rr in the dimensions `req` requests only (a GPU task ignores memory)."""
        return self.less_equal_with_dimension_and_resources_name(rr, req)[0]

    def less_equal_partly_with_dimension(self, rr: Resource, req: Resource | None) -> bool:
        """Some dimension requested by `req` is <= rr's (Volcano's ...ZeroFiltered).

        False when `req` is None or requests nothing: no dimension to be within.
        """
        dims = self._requested(rr, req) if req is not None else []
        return any(_le(left, right) for _, left, right in dims)


# -- module helpers -----------------------------------------------------------------------------


_EXACT = float(2 ** 53)


def exact_whole(r: Resource) -> bool:
    """Every value a whole number in [0, 2**53): sums of such are exact in any order (a total
    kept by adding and taking away such values equals a fresh sum)."""
    for v in (r.milli_cpu, r.memory, *r.scalars.values()):
        if v < 0 or v >= _EXACT or not v.is_integer():
            return False
    return True


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """Per dimension `max(0, left - right)` (Volcano's ExceededPart: the increased part of a Zero diff)."""
    return left.diff(right, Zero)[0]


def share(l: float, r: float) -> float:  # noqa: E741  (Volcano's parameter names)
    """l / r; 0 when both are 0, 1 when only r is 0 (Volcano's helpers.Share)."""
    if r == 0:
        return 0.0 if l == 0 else 1.0
    return l / r


def max_resource(a: Resource, b: Resource) -> Resource:
    """New resource, per-dimension max (a scalar missing on one side takes the other's value)."""
    return a.clone().set_max_resource(b)


def min_resource(a: Resource, b: Resource) -> Resource:
    """New resource, per-dimension min over a's dimensions (a scalar b lacks counts as 0)."""
    out = Resource(min(a.milli_cpu, b.milli_cpu), min(a.memory, b.memory))
    for name, v in a.scalars.items():
        out.scalars[name] = min(v, b.scalars.get(name, 0.0))
    return out
