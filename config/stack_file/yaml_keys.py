"""Mapping keys that are not text. YAML reads `1:`, `true:` and `~:` as a number, a boolean and
null; every key of a stack file, an include file or a Kubernetes object is text, and a mapping
that mixes both kinds cannot even be ordered, so such a key is refused at its mapping with the
quoted spelling as the fix."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from config.errors import Problem

KeyPath = tuple[object, ...]


def _kind(key: object) -> tuple[str, str]:
    """What YAML read, and how the key was most likely written."""
    if key is None:
        return "null", "null"
    return ("a boolean", str(key).lower()) if isinstance(key, bool) else ("a number", str(key))


def non_string_keys(data: Any, display: Callable[[KeyPath], str]) -> Iterator[Problem]:
    """A problem per key that is not text, at its mapping's path (without recursion)."""
    stack: list[tuple[KeyPath, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in items:
            if isinstance(value, dict) and not isinstance(key, str):
                kind, spelled = _kind(key)
                message = f"the key `{spelled}` is read as {kind}, and keys are text"
                yield Problem(display(path), message, f"quote it: `'{spelled}':`")
            else:
                stack.append(((*path, key), child))
