"""Resource vectors in the scheduler's units, and the comparisons Volcano makes between them.

`pkg/scheduler/api/resource_info.go` `NewResource`: cpu in milli-cores, memory in bytes, `pods` as a
count and every other resource (GPUs included) in milli-units. Comparisons carry the scheduler's
0.1 epsilon (`minResource`) except the quota checks of capacity and proportion, which compare
strictly and only on the dimensions the request names (`LessEqualWithDimensionAndResourcesName`).
"""

from __future__ import annotations

import math
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
