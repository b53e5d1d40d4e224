"""Problems found in a stack config, and the one error that carries all of them.

Every problem names the key path in the stack file, what is wrong, the value found and how to fix
it, so that a platform engineer can repair a config from the message alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]

REDACTED = "[secret]"


class _Missing:
    def __repr__(self) -> str:
        return "<not given>"


NOT_GIVEN = _Missing()


def describe_value(value: object, limit: int = 80) -> str:
    """Short, JSON-like rendering of a config value for messages."""
    if value is NOT_GIVEN:
        return "nothing"
    if value == REDACTED:
        return REDACTED
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Problem:
    """One finding about the stack config."""

    path: str
    message: str
    fix: str = ""
    got: object = field(default=NOT_GIVEN)
    severity: Severity = "error"

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}"
        if self.got is not NOT_GIVEN:
            text += f" (got {describe_value(self.got)})"
        if self.fix:
            text += f"; {self.fix}"
        return text


def join_path(*parts: object) -> str:
    """Dotted key path; keys that contain dots or slashes are bracketed so the path stays readable."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if not text:
            continue
        if any(ch in text for ch in "./ ") and out:
            out += f"[{text}]"
        else:
            out += ("." if out else "") + text
    return out


class ConfigError(Exception):
    """The stack config is invalid; `problems` lists every error found, in file order."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        super().__init__(self.render())

    def render(self) -> str:
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"invalid stack config ({count} {noun}):"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def warnings_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "warning"]
