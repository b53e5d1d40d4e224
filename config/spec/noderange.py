"""Compact node-name ranges: `gpu-worker-[1-64]`, `rack[1-2]-node[01-16]`, `gpu-[1-4,7]`.

Real clusters name nodes by pattern; listing 128 names by hand is how typos get in. A range whose
lower bound has a leading zero is zero-padded to that width (`[001-128]` is `001` ... `128`);
without one the numbers are written as they are (`[1-128]` is `1` ... `128`). Bounds of different
widths with a leading zero (`[01-1000]`) are refused: the padding they mean is ambiguous.
"""

from __future__ import annotations

import itertools
import re

from config.sections.fabric import MAX_TOPOLOGY_NODES  # one range can hold no more than a topology

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


class RangeError(ValueError):
    """A malformed range; the message says what and how to write it."""


def _parts(body: str) -> list[tuple[int, int, int]]:
    """The bracket's parts as (low, high, zero-padded width), checked, nothing expanded yet."""
    parts: list[tuple[int, int, int]] = []
    for part in body.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)-(\d+)", part)
        if match:
            low_text, high_text = match.groups()
            low, high = int(low_text), int(high_text)
            if high < low:
                raise RangeError(f"range `{part}` runs backwards")
            padded = low_text.startswith("0") and len(low_text) > 1
            high_padded = high_text.startswith("0") and len(high_text) > 1
            if (padded or high_padded) and len(low_text) != len(high_text):
                width = max(len(low_text), len(high_text))
                raise RangeError(
                    f"the bounds of `{part}` differ in width, so the padding is ambiguous: write "
                    f"`{str(low).zfill(width)}-{high_text.zfill(width)}` for zero-padded names "
                    f"or `{low}-{int(high_text)}` for unpadded ones"
                )
            parts.append((low, high, len(low_text) if padded else 0))
        elif re.fullmatch(r"\d+", part):
            parts.append((int(part), int(part), len(part)))
        else:
            raise RangeError(f"`[{body}]` is not a range")
    return parts


def _pieces(pattern: str) -> tuple[list[str], list[list[tuple[int, int, int]]]]:
    if pattern.count("[") != pattern.count("]"):
        raise RangeError("unbalanced brackets")
    pieces = _BRACKET.split(pattern)
    return pieces[0::2], [_parts(body) for body in pieces[1::2]]


def count_names(pattern: str) -> int:
    """How many names a pattern stands for, without writing them out (a typo such as
    `[1-100000000]` must cost nothing before it is refused)."""
    total = 1
    for parts in _pieces(pattern)[1]:
        total *= sum(high - low + 1 for low, high, _ in parts)
    return total


def expand(pattern: str) -> list[str]:
    """All names a pattern stands for, in order."""
    total = count_names(pattern)
    if total > MAX_TOPOLOGY_NODES:
        raise RangeError(f"expands to {total} names, more than {MAX_TOPOLOGY_NODES}")
    literals, brackets = _pieces(pattern)
    choices = [[str(n).zfill(width) for low, high, width in parts for n in range(low, high + 1)] for parts in brackets]
    names = []
    for combo in itertools.product(*choices):
        name = literals[0]
        for value, literal in zip(combo, literals[1:], strict=True):
            name += value + literal
        names.append(name)
    return names
