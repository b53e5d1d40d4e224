"""The `topology` section of a stack, written from the labels a cluster's nodes already carry.

A cluster labelled by hand (the seed article's `kubectl label` loops) moves to the program without
relabelling: the tier label keys name the tiers, their values name the domains, and each leaf lists
its nodes as compact ranges that expand back to exactly the same names, zero-padding included.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from config.schema.names import dns_subdomain_problem

_NUMBERED = re.compile(r"^(.*?)(\d+)(\D*)$")


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for number in sorted(set(numbers)):
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def _pattern(prefix: str, suffix: str, numbers: list[int], width: int) -> str:
    def text(number: int) -> str:
        return str(number).zfill(width)

    runs = _runs(numbers)
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"{prefix}{text(runs[0][0])}{suffix}"
    parts = [text(low) if low == high else f"{text(low)}-{text(high)}" for low, high in runs]
    return f"{prefix}[{','.join(parts)}]{suffix}"


def compact_ranges(names: Iterable[str]) -> list[str]:
    """Node names as few patterns as `config.spec.noderange.expand` turns back into the same names.

    Names that differ only in their last number are grouped; numbers written with a leading zero
    keep their width (`gpu-[001-128]`), the others are written as they are (`gpu-[1-128]`)."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    plain: list[str] = []
    for name in names:
        match = _NUMBERED.match(name)
        if match:
            prefix, digits, suffix = match.groups()
            groups[(prefix, suffix)].append(digits)
        else:
            plain.append(name)
    patterns = list(plain)
    for (prefix, suffix), digits in groups.items():
        padded_widths = {len(d) for d in digits if len(d) > 1 and d.startswith("0")}
        for width in sorted(padded_widths):
            patterns.append(_pattern(prefix, suffix, [int(d) for d in digits if len(d) == width], width))
        rest = [int(d) for d in digits if len(d) not in padded_widths]
        if rest:
            patterns.append(_pattern(prefix, suffix, rest, 0))
    return sorted(patterns, key=_natural)


@dataclass
class ImportedTopology:
    section: dict[str, Any]
    """The value of `volcano-platform:topology`."""
    unplaced: list[str] = field(default_factory=list)
    """Accelerator nodes missing one of the tier labels (left out of the section)."""
    problems: list[str] = field(default_factory=list)
    """What keeps the section from describing the cluster (conflicting parents, invalid names)."""


def import_topology(nodes: list[dict[str, Any]], tiers: list[str], resource: str) -> ImportedTopology:
    """`tiers` are label keys, tier 1 (leaf) first, as in the stack file. Nodes with none of the
    tier labels are ignored; accelerator nodes with only some of them are reported."""
    tree: dict[str, Any] = {}
    parents: dict[tuple[int, str], str | None] = {}
    leaves: dict[str, list[str]] = defaultdict(list)
    gpus: dict[str, Counter[int]] = defaultdict(Counter)
    result = ImportedTopology(section={})
    for node in sorted(nodes, key=lambda n: _natural(n.get("metadata", {}).get("name", ""))):
        metadata = node.get("metadata", {})
        name, labels = metadata.get("name", ""), metadata.get("labels") or {}
        values = [labels.get(tier) for tier in tiers]
        allocatable = node.get("status", {}).get("allocatable", {}) or {}
        count = int(str(allocatable.get(resource, "0")) or 0)
        if not any(values):
            continue
        if not all(values):
            if count:
                result.unplaced.append(name)
            continue
        # Top tier first: each domain must have one parent, the HyperNode tree has no diamonds.
        path = list(reversed([str(v) for v in values]))
        for depth, value in enumerate(path):
            tier = len(tiers) - depth
            parent = path[depth - 1] if depth else None
            known = parents.setdefault((tier, value), parent)
            if known != parent:
                result.problems.append(
                    f"domain `{value}` (tier {tier}, `{tiers[tier - 1]}`) is under both `{known}` and `{parent}` "
                    f"(node {name}); a domain can have one parent only"
                )
        node_tree = tree
        for value in path[:-1]:
            node_tree = node_tree.setdefault(value, {}).setdefault("domains", {})
        node_tree.setdefault(path[-1], {})
        leaves[path[-1]].append(name)
        gpus[path[-1]][count] += 1
    tiers_of: dict[str, set[int]] = defaultdict(set)
    for tier, value in parents:
        tiers_of[value].add(tier)
    for value, found in sorted(tiers_of.items()):
        if len(found) > 1:
            result.problems.append(f"`{value}` names a domain at tiers {sorted(found)}; domain names must be unique")
    for tier_value in sorted(tiers_of):
        if problem := dns_subdomain_problem(tier_value):
            result.problems.append(f"label value `{tier_value}` {problem}; rename the domain in the cluster first")
    overall = Counter[int]()
    for counts in gpus.values():
        overall.update(counts)
    default = overall.most_common(1)[0][0] if overall else None

    def fill(branch: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for value in sorted(branch, key=_natural):
            entry = branch[value]
            if "domains" in entry:
                out[value] = {"domains": fill(entry["domains"])}
                continue
            leaf: dict[str, Any] = {}
            counts = gpus[value]
            if len(counts) == 1 and default is not None and next(iter(counts)) != default:
                leaf["gpusPerNode"] = next(iter(counts))
            elif len(counts) > 1:
                result.problems.append(
                    f"leaf `{value}` mixes nodes with {sorted(counts)} {resource}; list them as `{{names, gpus}}`"
                )
            leaf["nodes"] = compact_ranges(leaves[value])
            out[value] = leaf
        return out

    section: dict[str, Any] = {"tiers": list(tiers)}
    if default is not None:
        section["gpusPerNode"] = default
    section["domains"] = fill(tree)
    result.section = section
    return result
