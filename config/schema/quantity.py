"""Kubernetes resource quantities (`12`, `500m`, `64Gi`) as written in the stack file.

The text is kept as the user wrote it (so rendered manifests read like the stack file) and parsed
with the Kubernetes client's own parser whenever quotas and requests are compared.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal, localcontext
from functools import cache, lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from config.schema.base import invalid

# The API server's own quantity grammar (also the CRDs' pattern); stricter than the parser below.
_QUANTITY = re.compile(
    r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


MAX_AMOUNT = Decimal(2**63 - 1)


@cache
def _client_parser() -> Callable[[Any], Any]:
    """`kubernetes.utils.quantity.parse_quantity`, loaded from its file alone. The module needs
    only `decimal`, but importing it through its package runs `kubernetes/__init__.py`, which
    loads the whole API client (websocket, jsonschema, the dynamic client): about 0.15 s of every
    render and preview, for a function of forty lines."""
    package = importlib.util.find_spec("kubernetes")  # finds the package without importing it
    if package is None or not package.submodule_search_locations:
        raise ImportError("the `kubernetes` package is not installed (requirements.txt)")
    path = Path(next(iter(package.submodule_search_locations))) / "utils" / "quantity.py"
    spec = importlib.util.spec_from_file_location("volcano_platform_k8s_quantity", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parse: Callable[[Any], Any] = module.parse_quantity
    return parse


@lru_cache(maxsize=4096)
def quantity_value(text: str) -> Decimal:
    """The numeric value of a quantity string (bytes for memory, cores for cpu)."""
    return Decimal(_client_parser()(text))


def quantity_problem(text: str) -> str | None:
    """Why `text` is not a quantity the API server accepts, or None."""
    return None if _QUANTITY.match(text.strip()) else "not a Kubernetes quantity"


def _to_quantity(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise invalid(
            "quantity must be a number or a string such as `500m` or `64Gi`",
            "write e.g. `cpu: 12` or `memory: 64Gi`",
        )
    text = str(value).strip() if isinstance(value, str) else format(value, "g")
    try:
        if not _QUANTITY.match(text):
            raise ValueError(text)
        amount = quantity_value(text)
    except ValueError:
        raise invalid(
            f"`{value}` is not a Kubernetes quantity",
            "use a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, Ti), e.g. `64Gi`",
        ) from None
    if amount < 0:
        raise invalid(f"`{value}` is negative", "use a quantity of zero or more")
    if amount > MAX_AMOUNT:
        raise invalid(f"`{value}` is larger than Kubernetes can represent", "use a realistic quantity")
    return text


Quantity = Annotated[
    str,
    BeforeValidator(_to_quantity),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "number", "minimum": 0}, {"type": "string"}],
            "description": "Kubernetes quantity, e.g. 12, 500m, 64Gi",
        }
    ),
]
"""A non-negative Kubernetes quantity; integers and strings are both accepted."""


def format_amount(amount: Decimal) -> str:
    """A compact rendering of a summed quantity for people (`16`, `128Gi`, `1.5`), valid as a
    quantity; objects a controller rewrites take `canonical_quantity`."""
    with localcontext() as context:
        context.prec = 60  # enough for any quantity the API server accepts
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if amount >= factor and amount % factor == 0:
                return f"{amount // factor}{suffix}"
        if amount == amount.to_integral_value():
            return str(int(amount))
        return format(amount.normalize(), "f")


def canonical_quantity(amount: Decimal) -> str:
    """A quantity in the canonical form Kubernetes' own clients write it (`16`, `128Gi`, `1500m`,
    `2k`: apimachinery pkg/api/resource/quantity.go, `CanonicalizeBytes`). A controller that
    updates an object the stack applied (Volcano's scheduler updates PodGroups) writes its
    quantities that way; any other spelling of the same amount (`1.5`) then changes hands, and the
    stack's next apply fails with a field conflict."""
    with localcontext() as context:
        context.prec = 60
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if amount >= factor and amount % factor == 0:
                return f"{amount // factor}{suffix}"
        if amount == amount.to_integral_value():
            whole = int(amount)
            for suffix, power in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)):
                if whole and whole % 10**power == 0:
                    return f"{whole // 10**power}{suffix}"
            return str(whole)
        for suffix, scale in (("m", 3), ("u", 6), ("n", 9)):
            scaled = amount.scaleb(scale)
            if scaled == scaled.to_integral_value():
                return f"{int(scaled)}{suffix}"
        return f"{int(amount.scaleb(9).to_integral_value(rounding=ROUND_CEILING))}n"
