"""Version numbers as tuples, for release comparisons."""

from __future__ import annotations

import re

Version = tuple[int, ...]


def version_text(version: Version) -> str:
    return ".".join(str(part) for part in version)


def version_tuple(version: str) -> tuple[int, ...]:
    """`1.15.0` / `v0.11.0-rc1` -> (1, 15, 0) for feature-floor comparisons."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not match:
        return (0,)
    return tuple(int(part) for part in match.groups() if part is not None)
