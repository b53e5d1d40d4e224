"""Checks of the PriorityClass set: one global default, and an order the names do not contradict."""

from __future__ import annotations

import re

from config.errors import Problem, join_path
from config.spec.platform import PlatformSpec

# Words in class names that promise a place in the order, from the top.
_RANK_WORDS = ("critical", "high", "normal", "medium", "low", "best-effort", "besteffort")
_P_NUMBER = re.compile(r"^p(\d+)\b")


def check_priority_classes(spec: PlatformSpec) -> list[Problem]:
    classes = spec.priority_classes
    defaults = [name for name, pc in classes.items() if pc.global_default]
    problems = [
        Problem(
            join_path("priorityClasses", name, "globalDefault"),
            f"{len(defaults)} classes are the global default ({', '.join(defaults)})",
            "mark at most one class `globalDefault: true`",
            got=True,
        )
        for name in defaults[1:]
    ]
    if defaults:
        name = defaults[0]
        chosen = classes[name]
        lower = [other for other, pc in classes.items() if pc.value < chosen.value]
        if lower and chosen.preemption_policy == "PreemptLowerPriority":
            problems.append(
                Problem(
                    join_path("priorityClasses", name, "globalDefault"),
                    f"every pod that names no class gets `{name}` ({chosen.value}), which preempts "
                    f"{', '.join(lower)}: any stray pod can evict work of those classes",
                    "make the lowest class the global default, or give this one `preemptionPolicy: Never`",
                    got=True,
                    severity="warning",
                )
            )
    problems += _names_contradict_values(spec)
    return problems


def _rank(name: str) -> tuple[int, int] | None:
    """(kind, position) a name promises: `p0` before `p1`; `critical` before `low`."""
    match = _P_NUMBER.match(name)
    if match:
        return (0, int(match.group(1)))
    for position, word in enumerate(_RANK_WORDS):
        if word in name:
            return (1, position)
    return None


def _names_contradict_values(spec: PlatformSpec) -> list[Problem]:
    ranked = [(name, rank, pc.value) for name, pc in spec.priority_classes.items() if (rank := _rank(name))]
    problems: list[Problem] = []
    for name, rank, value in ranked:
        for other, other_rank, other_value in ranked:
            if rank[0] == other_rank[0] and rank[1] > other_rank[1] and value > other_value:
                problems.append(
                    Problem(
                        join_path("priorityClasses", name, "value"),
                        f"`{name}` ({value}) ranks above `{other}` ({other_value}), which its name says it is below",
                        "swap the values, or rename the classes",
                        got=value,
                        severity="warning",
                    )
                )
    return problems
