"""Checks of the PriorityClass set."""

from __future__ import annotations

from config.errors import Problem, join_path
from config.spec import PlatformSpec


def check_priority_classes(spec: PlatformSpec) -> list[Problem]:
    defaults = [name for name, pc in spec.priority_classes.items() if pc.global_default]
    if len(defaults) <= 1:
        return []
    return [
        Problem(
            join_path("priorityClasses", name, "globalDefault"),
            f"{len(defaults)} classes are the global default ({', '.join(defaults)})",
            "mark at most one class `globalDefault: true`",
            got=True,
        )
        for name in defaults[1:]
    ]
