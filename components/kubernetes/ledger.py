"""Every Kubernetes object the program registers, kept for the pass that proves the tenant
boundary on them (`config.checks.tenancy.rendered`) before any of them reaches the engine.

`KubernetesResource` writes each object's inputs here while a `recording()` is open; the
platform opens one around everything it builds. Recording is a list append: the objects are the
inputs already built, not copies.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

_OPEN: contextvars.ContextVar[list[Mapping[str, Any]] | None] = contextvars.ContextVar("ledger", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[Mapping[str, Any]]]:
    """The list every object registered inside the block is appended to."""
    objects: list[Mapping[str, Any]] = []
    token = _OPEN.set(objects)
    try:
        yield objects
    finally:
        _OPEN.reset(token)


def record(inputs: Mapping[str, Any]) -> None:
    objects = _OPEN.get()
    if objects is not None:
        objects.append(inputs)
