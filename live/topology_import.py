"""The `topology` section of a stack, written from the labels a cluster's nodes already carry.

A cluster labelled by hand (the seed article's `kubectl label` loops) moves to the program without
relabelling: the tier label keys name the tiers, their values name the domains, and each leaf lists
its nodes as compact ranges that expand back to exactly the same names, zero-padding included.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import PydanticCustomError

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
    node_gpus: dict[str, int] = {}
    result = ImportedTopology(section={})
    for node in sorted(nodes, key=lambda n: _natural(n.get("metadata", {}).get("name", ""))):
        metadata = node.get("metadata", {})
        name, labels = metadata.get("name", ""), metadata.get("labels") or {}
        values = [labels.get(tier) for tier in tiers]
        allocatable = node.get("status", {}).get("allocatable", {}) or {}
        count = int(str(allocatable.get(resource, "0")) or 0)
        if not all(values):
            if count:  # an accelerator node without (all of) the tier labels: reported, never silently dropped
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
        node_gpus[name] = count
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
            usual = counts.most_common(1)[0][0]
            if usual != default:
                leaf["gpusPerNode"] = usual
            # Nodes with another count than the leaf's are listed as `{names, gpus}` groups.
            odd = {n: c for n, c in node_gpus.items() if n in set(leaves[value]) and c != usual}
            plain = [n for n in leaves[value] if n not in odd]
            leaf["nodes"] = compact_ranges(plain) + [
                {"names": pattern, "gpus": c}
                for c in sorted(set(odd.values()))
                for pattern in compact_ranges([n for n, k in odd.items() if k == c])
            ]
            out[value] = leaf
        return out

    section: dict[str, Any] = {"tiers": list(tiers)}
    if default is not None:
        section["gpusPerNode"] = default
    domains = fill(tree)
    fabric = regular_fabric(domains, len(tiers))
    if fabric is not None:
        section["fabric"] = fabric
    else:
        section["domains"] = domains
    result.section = section
    return result


def _name_pattern(names: list[str]) -> tuple[str, int] | None:
    """(`prefix{index...}suffix`, first index) when `names` are one pattern counting up by one."""
    matches = [_NUMBERED.match(name) for name in names]
    if not names or not all(matches):
        return None
    parts = [m.groups() for m in matches if m]
    prefixes, suffixes = {p for p, _, _ in parts}, {s for _, _, s in parts}
    if len(prefixes) != 1 or len(suffixes) != 1:
        return None
    digits = [d for _, d, _ in parts]
    padded = any(len(d) > 1 and d.startswith("0") for d in digits)
    width = len(digits[0])
    if padded and any(len(d) != width for d in digits):
        return None
    numbers = [int(d) for d in digits]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None
    if not padded and any(len(d) != len(str(int(d))) for d in digits):
        return None
    placeholder = f"{{index:0{width}}}" if padded else "{index}"
    return f"{prefixes.pop()}{placeholder}{suffixes.pop()}", numbers[0]


def regular_fabric(domains: dict[str, Any], tier_count: int) -> dict[str, Any] | None:
    """The `fabric` that expands to exactly `domains`, when the tree is regular: every domain of a
    tier holds as many children (leaves as many nodes, all with the default GPU count), and every
    tier's names and the node names count up by one from the same start."""
    from config.sections.fabric import FabricConfig, expand_fabric
    from config.spec.noderange import expand

    levels: list[list[tuple[str, dict[str, Any]]]] = [list(domains.items())]
    for _ in range(tier_count - 1):
        levels.append([child for _, entry in levels[-1] for child in (entry.get("domains") or {}).items()])
    leaves = levels[-1]
    if not leaves or any(
        "domains" in entry or "gpusPerNode" in entry or not all(isinstance(n, str) for n in entry.get("nodes", []))
        for _, entry in leaves
    ):
        return None
    nodes_of = [[n for pattern in entry.get("nodes", []) for n in expand(pattern)] for _, entry in leaves]
    sizes = [{len(entry.get("domains") or {}) for _, entry in level} for level in levels[:-1]]
    if {len(n) for n in nodes_of} != {len(nodes_of[0])} or any(len(size) != 1 for size in sizes):
        return None
    found = [_name_pattern([name for name, _ in level]) for level in levels]
    nodes = _name_pattern([node for leaf in nodes_of for node in leaf])
    if nodes is None or any(f is None for f in found) or len({nodes[1], *(f[1] for f in found if f)}) != 1:
        return None
    tier_sizes = [len(nodes_of[0]), *(size.pop() for size in reversed(sizes))]
    patterns = [f[0] for f in reversed(found) if f]
    fabric = {
        "nodes": nodes[0],
        "tiers": [{"name": name, "size": size} for name, size in zip(patterns, tier_sizes, strict=True)],
        "count": len(levels[0]),
        **({"start": nodes[1]} if nodes[1] != 1 else {}),
    }
    try:
        expanded = expand_fabric(FabricConfig.model_validate_json(json.dumps(fabric)))
    except (ValueError, PydanticCustomError):  # a pattern the fabric cannot write (too long, too wide)
        return None
    return fabric if _same_tree(expanded, domains) else None


def _same_tree(left: dict[str, Any], right: dict[str, Any]) -> bool:
    from config.spec.noderange import expand

    if list(left) != list(right):
        return False
    for name, entry in left.items():
        other = right[name]
        if "domains" in entry or "domains" in other:
            if not _same_tree(entry.get("domains") or {}, other.get("domains") or {}):
                return False
        elif [n for p in entry.get("nodes", []) for n in expand(p)] != [
            n for p in other.get("nodes", []) for n in expand(p)
        ]:
            return False
    return True
