"""Network topology: HyperNodes, the virtual root and the `network-topology-aware` plugin's search.

`pkg/scheduler/framework/session.go` adds a virtual root one tier above the highest real tier
holding every node, and reads a soft constraint as hard up to that root (`convertSoftToHardTopology`);
a hard constraint without a tier is not hard (`IsHardTopologyMode`). The plugin
(`plugins/network-topology-aware/network_topology_aware.go` `hyperNodeGradientFn`) offers the
HyperNodes at or below the allowed tier whose idle (or future idle) resources hold the job's
`minResources`, narrowest tier first for allocation, widest first (allocatable, capped) for eviction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from whatif.scheduler.framework import Plugin
from whatif.scheduler.model import ALLOCATED_STATUSES, HyperNode, Job, Topology
from whatif.scheduler.resources import EPSILON, Resources, fits

ROOT = "<cluster-top-hypernode>"


def add_root(hypernodes: dict[str, HyperNode], nodes: Iterable[str]) -> HyperNode:
    top = max((h.tier for h in hypernodes.values()), default=0) + 1
    root = HyperNode(ROOT, top, frozenset(nodes))
    for hypernode in hypernodes.values():
        if hypernode.parent is None:
            hypernode.parent = ROOT
    hypernodes[ROOT] = root
    return root


def tier_of(spec: Topology | None) -> int | None:
    """The highest tier a constraint allows (after `normalise`); None when it is not hard."""
    if spec is None or spec.mode != "hard":
        return None
    return spec.tier


def ancestors(name: str, hypernodes: dict[str, HyperNode]) -> list[str]:
    chain = []
    current: str | None = name
    while current is not None and current in hypernodes:
        chain.append(current)
        current = hypernodes[current].parent
    return chain


def lowest_containing(nodes: set[str], hypernodes: dict[str, HyperNode]) -> HyperNode | None:
    """The lowest-tier HyperNode that holds all of `nodes` (their LCA)."""
    holding = [h for h in hypernodes.values() if nodes <= h.nodes]
    return min(holding, key=lambda h: (h.tier, h.name)) if holding else None


def search_root(hypernodes: dict[str, HyperNode], available: str, tier: int, allocated: str | None) -> str | None:
    """`getSearchRoot`: where a (sub-)job may be searched for inside `available`. Without an
    allocated HyperNode that is `available` itself; else the highest ancestor of the allocated one
    the tier allows (`getHighestAllowedHyperNode`), narrowed to `available` when one holds the
    other. None when the allocated HyperNode already lies above the tier or the two do not meet:
    the gradient fails and nothing is tried."""
    if allocated is None:
        return available
    allowed = [h for h in ancestors(allocated, hypernodes) if hypernodes[h].tier <= tier]
    if not allowed:
        return None
    highest = hypernodes[allowed[-1]]
    inner = hypernodes[available]
    if inner.nodes <= highest.nodes:
        return available
    if highest.nodes <= inner.nodes:
        return highest.name
    return None


def _weight(arguments: dict[str, Any], key: str) -> int:
    """`Arguments.GetInt` with the plugin's rule that a negative weight falls back to 1."""
    value = int(arguments.get(key, 1))
    return value if value >= 0 else 1


def binpack_weights(arguments: dict[str, Any]) -> dict[str, int]:
    """`getPriorityWeight`: the HyperNode binpack weight of cpu, memory and each resource listed in
    `hypernode.binpack.resources` (1 unless set); resources not named here are not scored."""
    weights = {
        "cpu": _weight(arguments, "hypernode.binpack.cpu"),
        "memory": _weight(arguments, "hypernode.binpack.memory"),
    }
    for name in str(arguments.get("hypernode.binpack.resources", "")).split(","):
        if name.strip():
            weights[name.strip()] = _weight(arguments, f"hypernode.binpack.resources.{name.strip()}")
    return weights


def binpack_score(weights: dict[str, int], totals: tuple[Resources, Resources] | None, request: Resources) -> float:
    """`getSubJobHyperNodeBinPackingScore` for one HyperNode of (allocatable, used) `totals`: how
    full it would be with `request` (all of a sub-job's pods, placed ones too) in it, a weighted
    mean over the weighted resources the request names (at least `minResource`); 0 when one would
    overflow."""
    if totals is None:
        return 0.0
    total, used = totals
    score = 0.0
    weight_sum = 0
    for name, amount in request.items():
        weight = weights.get(name)
        if weight is None or amount < EPSILON:
            continue
        after = used.get(name, 0.0) + amount
        allocatable = total.get(name, 0.0)
        if after > allocatable:
            return 0.0
        score += weight * after / allocatable
        weight_sum += weight
    return score / weight_sum if weight_sum > 0 else 0.0


class NetworkTopologyPlugin(Plugin):
    name = "network-topology-aware"

    def on_session_open(self) -> None:
        self.binpack_weights = binpack_weights(self.arguments)
        # `initHyperNodeResourceCache`: each HyperNode's idle and future idle resources as the
        # session opens; its event handlers keep only `used` up to date, so the gradients' room
        # test (`isEligibleHyperNode`) reads these for the whole session.
        self.opening_room = {
            name: (dict(totals.idle), dict(totals.future_idle))
            for name, totals in self.session.hypernode_totals.items()
        }

    def has_room(self, hypernode: str, need: Resources) -> bool:
        """`isEligibleHyperNode` for allocation: `need` fits the HyperNode's idle or future idle
        resources as the session opened (a HyperNode it has no record of passes)."""
        room = self.opening_room.get(hypernode)
        return room is None or fits(need, room[0]) or fits(need, room[1])

    def _search_root(self, job: Job, tier: int) -> HyperNode | None:
        """`getSearchRoot` for the job, from the HyperNode it already runs in (as recorded, or the
        lowest that holds its placed pods, `recoverAllocatedHyperNode` in framework/session.go)."""
        hypernodes = self.session.hypernodes
        placed = {t.node for t in job.tasks if t.status in ALLOCATED_STATUSES and t.node}
        start = job.allocated_hypernode if job.allocated_hypernode in hypernodes else None
        if start is None and placed:
            lowest = lowest_containing(placed, hypernodes)
            start = lowest.name if lowest is not None else None
        root = search_root(hypernodes, ROOT, tier, start)
        return hypernodes[root] if root is not None else None

    def hypernode_gradients(self, job: Job, purpose: str) -> list[list[str]]:
        hypernodes = self.session.hypernodes
        tier = tier_of(job.topology)
        if tier is None:
            return [[ROOT]]
        root = self._search_root(job, tier)
        if root is None:
            return []
        need = job.min_resources or {}
        partly_running = any(t.status in ALLOCATED_STATUSES for t in job.tasks)
        by_tier: dict[int, list[str]] = {}
        for hypernode in hypernodes.values():
            if (
                hypernode.tier > tier
                or not hypernode.nodes <= root.nodes
                or (hypernode.name == ROOT and root.name != ROOT)
            ):
                continue
            totals = self.session.hypernode_totals[hypernode.name]
            if purpose == "allocate":
                if not partly_running and not self.has_room(hypernode.name, need):
                    continue
            elif not fits(need, totals.allocatable):
                continue
            by_tier.setdefault(hypernode.tier, []).append(hypernode.name)
        gradients = [sorted(by_tier[t]) for t in sorted(by_tier)]
        if purpose == "evict":
            cap = int(self.arguments.get("hypernode.gradient.evict.max-hypernodes", 8))
            gradients = [g[:cap] for g in reversed(gradients)]
        return gradients


def normalise(job: Job, hypernodes: dict[str, HyperNode]) -> None:
    """`adjustNetworkTopologySpec`: a tier name becomes its tier (an unknown name is left unset),
    soft becomes hard up to the virtual root."""
    specs = [job.topology] + [s.topology for s in job.subgroups]
    if all(spec is None for spec in specs) or ROOT not in hypernodes:
        return

    def resolve(spec: Topology | None, soft_tier: int) -> Topology | None:
        if spec is None:
            return None
        if spec.mode == "soft":
            return Topology("hard", soft_tier)
        if spec.tier_name is not None and spec.tier is None:
            named = [h.tier for h in hypernodes.values() if h.tier_name == spec.tier_name]
            return Topology(spec.mode, named[0] if named else None, spec.tier_name)
        return spec

    job.topology = resolve(job.topology, hypernodes[ROOT].tier)
    # `convertSoftToHardTopology`: a soft sub-group is bounded by the job's tier when it has one.
    bound = job.topology.tier if job.topology is not None and job.topology.tier is not None else None
    for sub in job.subgroups:
        sub.topology = resolve(sub.topology, bound if bound is not None else hypernodes[ROOT].tier)
