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
from whatif.scheduler.model import ALLOCATED_STATUSES, HyperNode, Job, Node, Task, Topology
from whatif.scheduler.resources import EPSILON, Resources, fits
from whatif.scheduler.subgroups import SubJob, subjobs

MAX_NODE_SCORE = 100
"""`framework.MaxNodeScore`, which `scaleFinalScore` multiplies the plugin's weight by."""

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


def lowest_common(hypernodes: dict[str, HyperNode], first: str, second: str) -> str:
    """`HyperNodeInfoMap.GetLCAHyperNode`: the lowest HyperNode above (or at) both; either one
    when the other is empty."""
    if not first:
        return second
    if not second:
        return first
    above_first = set(ancestors(first, hypernodes))
    return next((h for h in ancestors(second, hypernodes) if h in above_first), "")


def sub_job_of(job: Job, task: Task) -> SubJob | None:
    return next((s for s in subjobs(job) if any(t is task for t in s.tasks)), None)


class NetworkTopologyPlugin(Plugin):
    """The plugin's HyperNode gradients, its room test and its node score (`batchNodeOrderFn`)."""

    name = "network-topology-aware"

    def on_session_open(self) -> None:
        self.binpack_weights = binpack_weights(self.arguments)
        self.weight = _weight(self.arguments, "weight")
        self.normal_pods = str(self.arguments.get("hypernode.binpack.normal-pod.enable", True)).lower() != "false"
        fading = float(self.arguments.get("hypernode.binpack.normal-pod.fading", 0.8))
        self.fading = fading if fading >= 0 else 0.8
        hypernodes = self.session.hypernodes
        # `ssn.HyperNodesTiers`, the virtual root's tier included; a node's leaf is the HyperNode of
        # the lowest tier that holds it (`util.FindHyperNodeForNode`).
        tiers = sorted({h.tier for h in hypernodes.values()})
        self.min_tier: int = tiers[0] if tiers else 0
        self.max_tier: int = tiers[-1] if tiers else 0
        self.leaf_of: dict[str, str] = {}
        for hypernode in sorted(hypernodes.values(), key=lambda h: h.name):
            if hypernode.tier == self.min_tier:
                for node in hypernode.nodes:
                    self.leaf_of.setdefault(node, hypernode.name)
        # `hyperNodeResourceCache.used`: the nodes' used resources as the session opens, then what
        # the session allocates, pipelines (added) and evicts (taken off), by its event handlers.
        self.used = {name: dict(totals.used) for name, totals in self.session.hypernode_totals.items()}
        # `initHyperNodeResourceCache`: each HyperNode's idle and future idle resources as the
        # session opens; its event handlers keep only `used` up to date, so the gradients' room
        # test (`isEligibleHyperNode`) reads these for the whole session.
        self.opening_room = {
            name: (dict(totals.idle), dict(totals.future_idle))
            for name, totals in self.session.hypernode_totals.items()
        }

    def allocate_event(self, task: Task, sign: int) -> None:
        for totals in self.session.node_hypernodes.get(task.node, ()):
            used = self.used.setdefault(totals.name, {})
            for name, amount in task.resreq.items():
                used[name] = used.get(name, 0.0) + sign * amount

    def couples_nodes(self, task: Task) -> bool:
        """Whether one node's score depends on the others' (the tie bonus of pods bound to a
        topology), so candidate nodes must be scored one by one."""
        return bool(task.job_allocated_hypernode)

    def batch_node_scores(self, task: Task, nodes: list[Node]) -> dict[str, float]:
        """`batchNodeOrderFn`: pods of a sub-group bound to a topology score by how close a node
        is to the HyperNode the sub-group spans so far; other pods by how full the node's
        HyperNodes would be, tier by tier (`batchNodeOrderFnForNormalPods`)."""
        job = self.session.jobs.get(task.job)
        sub = sub_job_of(job, task) if job is not None else None
        if sub is not None and sub.topology is not None:
            scores = self._near(task, sub, nodes)
        elif self.normal_pods:
            scores = {node.name: self._fullness(task, node) for node in nodes}
        else:
            scores = {}
        return {name: MAX_NODE_SCORE * self.weight * score for name, score in scores.items()}

    def _fullness(self, task: Task, node: Node) -> float:
        """The tier-weighted mean of `getPodHyperNodeBinPackingScore` over the node's HyperNodes;
        a tier where no HyperNode holds the node scores full."""
        hypernodes = self.session.hypernodes
        by_tier = {hypernodes[t.name].tier: t.name for t in self.session.node_hypernodes.get(node.name, ())}
        total = weights = 0.0
        for tier in range(self.min_tier, self.max_tier + 1):
            weight = self.fading ** (tier - 1)
            weights += weight
            held = by_tier.get(tier)
            total += weight * (self._pod_fullness(task, held) if held is not None else 1.0)
        return total / weights if weights > 0 else 0.0

    def _pod_fullness(self, task: Task, hypernode: str) -> float:
        """`getPodHyperNodeBinPackingScore`: the weighted share of the HyperNode's allocatable the
        pod would bring it to; 0 when a resource would overflow."""
        allocatable = self.session.hypernode_totals[hypernode].allocatable
        used = self.used.get(hypernode, {})
        score = 0.0
        weight_sum = 0
        for name, amount in task.resreq.items():
            weight = self.binpack_weights.get(name)
            if weight is None or amount < EPSILON:
                continue
            after = used.get(name, 0.0) + amount
            if after > allocatable.get(name, 0.0):
                return 0.0
            score += weight * after / allocatable[name]
            weight_sum += weight
        return score / weight_sum if weight_sum > 0 else 0.0

    def _near(self, task: Task, sub: SubJob, nodes: list[Node]) -> dict[str, float]:
        """`batchNodeOrderFnForNetworkAwarePods`: the tier of the lowest HyperNode holding both the
        node's leaf and the sub-group's HyperNode (full in the same leaf); where several nodes
        share the best score, each gains the share of the sub-group's pods its leaf holds."""
        allocated = task.job_allocated_hypernode
        if not allocated:
            return {}
        scores = {node.name: self._tier_score(self.leaf_of.get(node.name, ""), allocated) for node in nodes}
        best = max(scores.values(), default=0.0)
        top = [name for name, score in scores.items() if score == best]
        if len(top) > 1 and sub.tasks:
            hypernodes = self.session.hypernodes
            for name in top:
                leaf = self.leaf_of.get(name, "")
                members = hypernodes[leaf].nodes if leaf in hypernodes else frozenset()
                scores[name] += sum(1 for t in sub.tasks if t.node in members) / len(sub.tasks)
        return scores

    def _tier_score(self, leaf: str, allocated: str) -> float:
        """`networkTopologyAwareScore`."""
        if not leaf or not allocated:
            return 0.0
        if leaf == allocated:
            return 1.0
        hypernodes = self.session.hypernodes
        common = lowest_common(hypernodes, leaf, allocated)
        if common not in hypernodes:
            return 0.0
        if self.min_tier == self.max_tier:
            return 1.0
        tier = hypernodes[common].tier
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def spans(self, hypernode: str, node: str) -> str:
        """`getNewAllocatedHyperNode`: the HyperNode a sub-group spans once a pod joins it on `node`."""
        leaf = self.leaf_of.get(node, "")
        return lowest_common(self.session.hypernodes, leaf, hypernode) if leaf else hypernode

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
