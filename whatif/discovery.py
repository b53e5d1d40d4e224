"""The HyperNodes Volcano's label discovery builds from the nodes' tier labels.

Pools described by their labels' shape name no node, so where a dump holds no HyperNodes yet the
what-if builds them as the controller would (`pkg/controllers/hypernode/discovery/label/label.go`,
v1.15.1): one HyperNode per tier and label value, the nodes carrying that value as members of a
tier-1 HyperNode, each higher one holding the lower ones its nodes' labels put under it.
Discovery walks a node's tier labels from tier 1 up and stops at the first it lacks
(`generateHyperNodeInfo`): a node without the tier-1 label is in none, one without a higher
tier's label is in the tiers below it (a leaf with no spine label is a tier-1 HyperNode with no
parent). A label present with an empty value counts, as in the controller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_UNSAFE = re.compile(r"[^a-z0-9.-]+")


@dataclass
class DiscoveredDomain:
    name: str
    tier: int
    tier_name: str
    parent: str | None = None
    nodes: set[str] = field(default_factory=set)
    """Every node below it."""
    children: list[str] = field(default_factory=list)
    """Tier 1: its nodes; above: the HyperNodes one tier lower."""


def domain_name(tier: int, value: str) -> str:
    """A HyperNode name for a tier's label value (the controller's own are random)."""
    cleaned = _UNSAFE.sub("-", value.lower()).strip("-.") or "x"
    return f"tier{tier}-{cleaned}"[:253]


def discover(nodes: Iterable[tuple[str, Mapping[str, str]]], tiers: tuple[str, ...]) -> dict[str, DiscoveredDomain]:
    """Domains by name, parents before children; `nodes` are (name, labels)."""
    found: dict[str, DiscoveredDomain] = {}
    for node, labels in nodes:
        below: str | None = None
        for tier in range(1, len(tiers) + 1):
            if tiers[tier - 1] not in labels:
                break
            name = domain_name(tier, labels[tiers[tier - 1]])
            domain = found.setdefault(name, DiscoveredDomain(name, tier, tiers[tier - 1]))
            domain.nodes.add(node)
            member = node if tier == 1 else below
            if member is not None and member not in domain.children:
                domain.children.append(member)
            if below is not None and found[below].parent is None:
                found[below].parent = name
            below = name
    return dict(sorted(found.items(), key=lambda item: -item[1].tier))
