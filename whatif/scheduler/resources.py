"""Resource vectors in the scheduler's units, and the comparisons Volcano makes between them.

`pkg/scheduler/api/resource_info.go` `NewResource`: cpu in milli-cores, memory in bytes, `pods` as a
count and every other resource (GPUs included) in milli-units. Comparisons carry the scheduler's
0.1 epsilon (`minResource`) except the quota checks of capacity and proportion, which compare
strictly and only on the dimensions the request names (`LessEqualWithDimensionAndResourcesName`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache

from config.schema.quantity import quantity_value

Resources = dict[str, float]
EPSILON = 0.1
PODS = "pods"
INFINITE = math.inf


def scheduler_units(requests: Mapping[str, object]) -> Resources:
    """Kubernetes quantities -> the scheduler's units (`NewResource`); `count/*` names are dropped."""
    out: Resources = {}
    for name, text in requests.items():
        if name.startswith("count/"):
            continue
        out[name] = _units(name, str(text))
    return out


@lru_cache(maxsize=4096)
def _units(name: str, text: str) -> float:
    """One quantity in the scheduler's units; a dump of 50,000 pods spells few distinct ones."""
    amount = float(quantity_value(text))
    return amount if name in ("memory", PODS) else amount * 1000


def add(total: Resources, other: Mapping[str, float], sign: float = 1.0) -> Resources:
    for name, amount in other.items():
        total[name] = total.get(name, 0.0) + sign * amount
    return total


def plus(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    return add(dict(a), b)


def minus(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    return add(dict(a), b, -1.0)


def total(items: Iterable[Mapping[str, float]]) -> Resources:
    out: Resources = {}
    for item in items:
        add(out, item)
    return out


def is_empty(resources: Mapping[str, float]) -> bool:
    """`Resource.IsEmpty`: nothing above the epsilon, `pods` ignored (a BestEffort pod)."""
    return all(amount < EPSILON for name, amount in resources.items() if name != PODS)


def fits(request: Mapping[str, float], available: Mapping[str, float], missing: float = 0.0) -> bool:
    """`LessEqual(…, Zero)`: every dimension of `request` within `available`, the pod count
    included (absent counts as `missing`)."""
    for name, amount in request.items():  # a plain loop: this is the engine's innermost test
        if amount > EPSILON and amount > available.get(name, missing) + EPSILON:
            return False
    return True


def fits_on_requested(used: Mapping[str, float], limit: Mapping[str, float], request: Mapping[str, float]) -> bool:
    """`LessEqualWithDimensionAndResourcesName(limit, request)` applied to `used`: only dimensions
    the request names with a positive amount, `pods` ignored, strict, an absent limit unlimited."""
    return all(
        used.get(name, 0.0) <= limit.get(name, INFINITE)
        for name, amount in request.items()
        if amount > 0 and name != PODS
    )


def exceeds_somewhere(allocated: Mapping[str, float], limit: Mapping[str, float]) -> bool:
    """`!allocated.LessEqual(limit)` on `limit`'s dimensions (proportion's reclaimable test)."""
    return any(allocated.get(name, 0.0) > amount + EPSILON for name, amount in limit.items())


def describe(resources: Mapping[str, float]) -> str:
    """Readable amounts: cores, GiB, whole devices."""
    parts = []
    for name in sorted(resources):
        amount = resources[name]
        if name == "memory":
            parts.append(f"memory {amount / 2**30:g}Gi")
        elif name == PODS:
            continue
        else:
            parts.append(f"{name} {amount / 1000:g}")
    return ", ".join(parts) or "nothing"


# The arithmetic the queue plugins rely on in its exact shape: a `Resource` always has cpu and
# memory (0 when unset) and a map of scalars; comparisons differ in how they treat a scalar one
# side lacks and whether they allow the 0.1 epsilon. These helpers reproduce each one the capacity
# and proportion plugins call.

MAX = sys.float_info.max
BASE = ("cpu", "memory")


def resource(values: Mapping[str, float] | None) -> Resources:
    """`NewResource`: cpu and memory always present."""
    return {"cpu": 0.0, "memory": 0.0, **(values or {})}


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < EPSILON


def less_equal(r: Mapping[str, float], rr: Mapping[str, float], infinity: bool) -> bool:
    """`LessEqual(rr, Zero|Infinity)`."""
    if not all(_le(r.get(n, 0.0), rr.get(n, 0.0)) for n in BASE):
        return False
    scalars = [n for n in r if n not in BASE]
    if infinity and any(n not in r for n in rr if n not in BASE):
        return False
    for name in scalars:
        if name not in rr and infinity:
            continue
        if not _le(r[name], rr.get(name, 0.0)):
            return False
    return True


def names(r: Mapping[str, float]) -> set[str]:
    """`ResourceNames`: dimensions at or above the epsilon."""
    return {n for n, v in r.items() if v >= EPSILON}


def intersects(a: Mapping[str, float], b: Mapping[str, float], ignore_pods: bool) -> bool:
    common = names(a) & names(b)
    return bool(common - {PODS}) if ignore_pods else bool(common)


def within_on_requested(r: Mapping[str, float], rr: Mapping[str, float], req: Mapping[str, float]) -> list[str]:
    """`LessEqualWithDimensionAndResourcesName`: the dimensions of `req` where `r` exceeds `rr`
    (strict; a scalar `rr` lacks counts as 0; `pods` ignored)."""
    return [n for n, q in req.items() if q > 0 and n != PODS and r.get(n, 0.0) > rr.get(n, 0.0)]


def partly_within_zero_filtered(r: Mapping[str, float], rr: Mapping[str, float], req: Mapping[str, float]) -> bool:
    """`LessEqualPartlyWithDimensionZeroFiltered`: some requested dimension (not zero on both
    sides) where `r <= rr`."""
    for name, quantity in req.items():
        if quantity <= 0 or name == PODS:
            continue
        left, right = r.get(name, 0.0), rr.get(name, 0.0)
        if left < EPSILON and right < EPSILON:
            continue
        if _le(left, right):
            return True
    return False


def greater_on_relevant(r: Mapping[str, float], rr: Mapping[str, float], req: Mapping[str, float]) -> bool:
    """`GreaterPartlyWithRelevantDimensions`: some dimension the request names and `rr` defines
    (cpu and memory when at least the epsilon, scalars when present) where `r > rr`."""
    for name, quantity in req.items():
        if quantity <= 0 or name == PODS:
            continue
        if name in BASE:
            if rr.get(name, 0.0) < EPSILON:
                continue
        elif name not in rr:
            continue
        if r.get(name, 0.0) > rr.get(name, 0.0):
            return True
    return False


def exceeded_part(left: Mapping[str, float], right: Mapping[str, float]) -> Resources:
    """`ExceededPart` (`Resource.Diff`'s increase): max(0, left - right) for cpu and memory; a
    scalar only where left exceeds right. A scalar used up is absent, not 0, and an absent scalar
    limits nothing where `MinDimensionResource(…, Infinity)` reads it: a queue's real capability
    of a GPU that the guarantees take whole does not cap its deserved."""
    out = resource({})
    for name in set(left) | set(right):
        excess = left.get(name, 0.0) - right.get(name, 0.0)
        if name in BASE:
            out[name] = max(0.0, excess)
        elif excess > 0:
            out[name] = excess
    return out


def min_dimension(r: Mapping[str, float], rr: Mapping[str, float], zero: bool = False) -> Resources:
    """`MinDimensionResource(rr, Infinity|Zero)`: per dimension of `r`, the smaller; a scalar `rr`
    lacks leaves `r` as it is (Infinity) or makes it 0 (Zero)."""
    return {n: (min(v, rr[n]) if n in rr else (0.0 if zero and n not in BASE else v)) for n, v in r.items()}


def maximum(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    """`helpers.Max`."""
    return {n: max(a.get(n, 0.0), b.get(n, 0.0)) for n in set(a) | set(b)}


def share(allocated: Mapping[str, float], deserved: Mapping[str, float]) -> float:
    """`updateQueueAttrShare`: 1 for a queue without deserved (best effort), else the largest
    allocated/deserved over deserved's dimensions."""
    dims = names(deserved) - {PODS}
    if not dims:
        return 1.0
    out = 0.0
    for name in names(deserved):
        d, a = deserved[name], allocated.get(name, 0.0)
        out = max(out, (0.0 if a == 0 else 1.0) if d == 0 else a / d)
    return out


def capability_of(spec: Mapping[str, float]) -> Resources | None:
    """A queue's capability with cpu or memory <= 0 read as unlimited (`buildQueueAttrs`)."""
    if not spec:
        return None
    cap = resource(spec)
    for name in BASE:
        if cap[name] <= 0:
            cap[name] = MAX
    return cap


def summed(items: Iterable[Mapping[str, float]]) -> Resources:
    out = resource({})
    for item in items:
        for name, value in item.items():
            out[name] = out.get(name, 0.0) + value
    return out


def is_infinite(value: float) -> bool:
    return math.isinf(value) or value >= MAX / 2


Shape = tuple[tuple[str, float], ...]
"""A pod's requests as sorted (resource, amount) pairs."""


def shape_of(request: Resources) -> Shape:
    return tuple(sorted(request.items()))


def places_on(available: Resources, shape: Shape) -> int:
    """How many pods of `shape` fit in `available`, as `fits` counts (absent is none; a node
    already over its allocatable, as a dump can show, has room for none, not fewer)."""
    places = INFINITE
    for name, amount in shape:
        if amount > EPSILON:
            places = min(places, (available.get(name, 0.0) + EPSILON) // amount)
    return max(0, int(places)) if places < INFINITE else 1 << 20
