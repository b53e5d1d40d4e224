"""Problems found in a stack config, and the one error that carries all of them.

Every problem names the key path in the stack file, what is wrong, the value found and how to fix
it, so that a platform engineer can repair a config from the message alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from config.credential_shapes import credential_shape, redact

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
    if shape := credential_shape(text):
        return f"[hidden: {shape}]"
    return one_line(text if len(text) <= limit else text[: limit - 3] + "...")


# Control characters (newlines included) and backticks would let a key or value written in a stack
# file break out of the line, or of a Markdown code span, where messages are shown (terminals, CI
# logs, pull-request comments).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_OR_BACKTICK = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029`]")


def one_line(text: str, keep_backticks: bool = False) -> str:
    """`text` with control characters (and backticks, unless kept) escaped as JSON escapes them."""
    pattern = _CONTROL if keep_backticks else _CONTROL_OR_BACKTICK
    return pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass(frozen=True)
class Problem:
    """One finding about the stack config."""

    path: str
    message: str
    fix: str = ""
    got: object = field(default=NOT_GIVEN)
    severity: Severity = "error"
    file: str = ""
    """The included file (`include`) the key path is in; empty for the stack file."""

    def __str__(self) -> str:
        where = f"{one_line(self.file)}: " if self.file else ""
        text = f"{where}{self.path}: {one_line(redact(self.message), keep_backticks=True)}"
        if self.got is not NOT_GIVEN:
            text += f" (got {describe_value(self.got)})"
        if self.fix:
            text += f"; {one_line(redact(self.fix), keep_backticks=True)}"
        return redact(text) if credential_shape(self.path) else text


def join_path(*parts: object) -> str:
    """Dotted key path; keys that contain dots or slashes are bracketed so the path stays readable,
    and keys with any other character are quoted so that they cannot end the line or the code span
    they are printed in."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if not text:
            continue
        if not _PLAIN_KEY.fullmatch(text):
            out += "[" + one_line(json.dumps(text)) + "]"
        elif any(ch in text for ch in "./ ") and out:
            out += f"[{text}]"
        else:
            out += ("." if out else "") + text
    return out


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.:/@+= -]+")


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
