"""Markdown that text from a stack file, a render or a cluster cannot break out of.

Pull-request comments show keys, values and manifests that anyone who can open a pull request
wrote. A fence is one backtick longer than any run of backticks inside it (CommonMark closes a
fence only with at least as many), and inline text has its line breaks escaped and sits in a code
span, so nothing inside can end the block, start a heading or mention someone."""

from __future__ import annotations

import html
import re

from config.errors import one_line

_BACKTICKS = re.compile(r"`+")


def fence(text: str, info: str = "") -> str:
    """`text` as a fenced code block that nothing inside can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    return f"{marker}{info}\n{text.rstrip(chr(10))}\n{marker}"


def code(text: str) -> str:
    """`text` on one line, as an inline code span that nothing inside can close."""
    line = one_line(text, keep_backticks=True)
    longest = max((len(run) for run in _BACKTICKS.findall(line)), default=0)
    marker = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line.strip() else ""
    return f"{marker}{pad}{line}{pad}{marker}"


def html_code(text: str) -> str:
    """`text` inside `<code>` in HTML (a `<summary>`), escaped."""
    return f"<code>{html.escape(one_line(text))}</code>"
