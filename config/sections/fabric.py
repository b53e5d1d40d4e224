"""`topology.fabric`: a regular network tree in a few lines.

"16 nodes per leaf, 8 leaves per spine, 4 spines per superspine, 2 superspines per zone, 2 zones"
with a name pattern per tier expands to exactly the `domains` tree one would write out: every
domain at every tier, each leaf with one node range. Parts that are not regular are written in
`domains` beside it and merged into the generated tree by name (a short leaf, nodes with fewer
GPUs, an extra leaf), and `omit` drops generated domains that do not exist."""

import re
from typing import Annotated, Any

from pydantic import Field, field_validator

from config.schema.base import ConfigModel, invalid

# `{index}` or `{index:0N}` (zero-padded to N digits), once per pattern.
_PLACEHOLDER = re.compile(r"\{index(?::0(\d))?\}")
_NAME_CHARS = re.compile(r"^[a-z0-9.-]*$")


def _pattern(value: str) -> str:
    found = _PLACEHOLDER.findall(value)
    rest = _PLACEHOLDER.sub("", value)
    if len(found) != 1 or not _NAME_CHARS.match(rest):
        raise invalid(
            f"name pattern `{value}` must hold `{{index}}` (or `{{index:03}}`, zero-padded) once, with lower-case "
            "letters, digits, '-' and '.' around it",
            "e.g. `leaf-{index:03}` (leaf-001, leaf-002, ...) or `gpu-{index}`",
        )
    return value


NamePattern = Annotated[str, Field(min_length=1, max_length=60)]

MAX_TOPOLOGY_NODES = 100_000
"""Nodes one topology may hold once every fabric, range and pool shape is expanded: ten times the
largest cluster the project measures (bench/results.md). Counted before anything is expanded, so a
typo that multiplies (a fabric size, a range bound) is refused at once instead of filling memory."""


def fabric_nodes(fabric: "FabricConfig") -> int:
    """The nodes a fabric expands to: its top-tier count times every tier's size."""
    total = fabric.count
    for tier in fabric.tiers:
        total *= tier.size
    return total


class FabricTier(ConfigModel):
    """One tier of a regular fabric."""

    name: NamePattern
    """Domain names at this tier, e.g. `leaf-{index:03}`; the index counts across the whole tier,
    from `fabric.start`."""
    size: Annotated[int, Field(ge=1, le=4096)]
    """What each domain of this tier holds: nodes per leaf (tier 1), leaves per spine (tier 2),
    and so on."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _pattern(value)


class FabricConfig(ConfigModel):
    """A regular tree: `tiers[0]` is the leaf tier (its `size` is nodes per leaf)."""

    nodes: NamePattern
    """Node names, e.g. `gpu-{index:04}`; the index counts across the whole fabric, from `start`."""
    tiers: Annotated[tuple[FabricTier, ...], Field(min_length=1, max_length=6)]
    """One entry per `topology.tiers` entry, tier 1 (leaf) first."""
    count: Annotated[int, Field(ge=1, le=4096)] = 1
    """Domains at the top tier."""
    start: Annotated[int, Field(ge=0)] = 1
    """First index of every pattern."""
    omit: tuple[str, ...] = ()
    """Generated domains (at any tier) that do not exist, with everything below them."""

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: str) -> str:
        return _pattern(value)


def _name(pattern: str, index: int) -> str:
    match = _PLACEHOLDER.search(pattern)
    assert match is not None  # validated
    width = int(match.group(1) or 0)
    number = str(index).zfill(width)
    if width and len(number) > width:
        raise invalid(
            f"index {index} does not fit the {width} digits of `{pattern}`",
            "widen the zero padding, e.g. `{index:04}`",
        )
    return pattern[: match.start()] + number + pattern[match.end() :]


def _node_range(pattern: str, first: int, last: int) -> str:
    """Nodes `first..last` as one range the node-range syntax expands to the same names."""
    if first == last:
        return _name(pattern, first)
    match = _PLACEHOLDER.search(pattern)
    assert match is not None
    width = int(match.group(1) or 0)
    low, high = str(first).zfill(width), str(last).zfill(width)
    if width and len(high) > width:
        raise invalid(f"index {last} does not fit the {width} digits of `{pattern}`", "widen the zero padding")
    if not width and len(low) != len(high) and low.startswith("0"):
        low = str(first)
    return f"{pattern[: match.start()]}[{low}-{high}]{pattern[match.end() :]}"


def expand_fabric(fabric: FabricConfig) -> dict[str, Any]:
    """The `domains` mapping (stack-file spelling) the fabric stands for."""
    counters = [fabric.start] * len(fabric.tiers)
    node_counter = [fabric.start]
    omitted = set(fabric.omit)

    def domain(level: int) -> tuple[str, dict[str, Any]]:
        tier = fabric.tiers[level]
        name = _name(tier.name, counters[level])
        counters[level] += 1
        if level == 0:
            first = node_counter[0]
            node_counter[0] += tier.size
            return name, {"nodes": [_node_range(fabric.nodes, first, first + tier.size - 1)]}
        children = dict(domain(level - 1) for _ in range(tier.size))
        return name, {"domains": {k: v for k, v in children.items() if k not in omitted}}

    top = len(fabric.tiers) - 1
    generated = dict(domain(top) for _ in range(fabric.count))
    return {k: v for k, v in generated.items() if k not in omitted}


def merge_domains(generated: dict[str, Any], explicit: dict[str, Any]) -> dict[str, Any]:
    """Explicit domains over generated ones, by name: a domain's own `nodes` and `gpusPerNode`
    replace the generated ones, its child `domains` merge the same way, new names are added."""
    out = dict(generated)
    for name, own in explicit.items():
        base = out.get(name)
        if not isinstance(base, dict) or not isinstance(own, dict):
            out[name] = own
            continue
        merged = {**base, **{k: v for k, v in own.items() if k != "domains"}}
        if "domains" in own or "domains" in base:
            merged["domains"] = merge_domains(base.get("domains") or {}, own.get("domains") or {})
        out[name] = merged
    return out
