"""Regular expressions as Volcano's Go code reads them: RE2 syntax (no look-around, no
backreferences) and linear-time matching, through the RE2 library itself.

A HyperNode's `regexMatch` member holds every node whose name the pattern *finds* (Go's
`regexp.MatchString`, unanchored), and a pattern Go cannot compile selects no node
(`GetMembers` in volcano pkg/scheduler/api/hyper_node_info.go). Python's `re` differs on both
(`re.match` anchors at the start, look-arounds compile) and can backtrack for ever on a pattern
such as `(a+)+$`."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a bad pattern is reported by the caller, not logged by the library


@lru_cache(maxsize=1024)
def compile_go(pattern: str) -> Any:
    """The compiled pattern, or None where Go's `regexp.Compile` would fail."""
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error:
        return None


def go_regexp_problem(pattern: str) -> str | None:
    """Why Go would refuse the pattern, or None."""
    try:
        re2.compile(pattern, options=_OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        return reason.decode() if isinstance(reason, bytes) else str(reason)
    return None


def finds(pattern: str, text: str) -> bool:
    """Go's `regexp.MustCompile(pattern).MatchString(text)`; False for a pattern Go refuses."""
    compiled = compile_go(pattern)
    return compiled is not None and compiled.search(text) is not None
