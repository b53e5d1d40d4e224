"""HyperNode gradients: where a sub-group with its own topology is tried, and in which order
(`HyperNodeGradientForSubJobFn` of the network-topology-aware plugin,
pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go; the eviction purpose of
`actions/utils/simulate.go` `BuildNominationPlanInDomain`), shared by allocation and by gang
eviction's nomination."""

from __future__ import annotations

from collections.abc import Iterator

from whatif.scheduler.model import ALLOCATED_STATUSES, HyperNode, Node, Task
from whatif.scheduler.resources import Resources, fits, shape_of, total
from whatif.scheduler.session import Session
from whatif.scheduler.subgroups import SubJob
from whatif.scheduler.topology import (
    ROOT,
    NetworkTopologyPlugin,
    binpack_score,
    binpack_weights,
    lowest_containing,
    search_root,
)


def members(session: Session, hypernode: str) -> list[Node] | None:
    """The nodes of a HyperNode by name; None for the whole cluster (searched by node class)."""
    if hypernode == ROOT:
        return None
    return [session.nodes[n] for n in sorted(session.hypernodes[hypernode].nodes) if n in session.nodes]


def sub_domains(
    session: Session, sub: SubJob, hypernode: str, pending: list[Task], evicting: bool = False
) -> Iterator[str]:
    """`HyperNodeGradientForSubJobFn`: for a sub-group with a hard topology, the HyperNodes inside
    its search root (`search_root`: the job's HyperNode, or less around where the sub-group already
    runs) that its tier allows and, for a sub-group not yet placed, whose future idle resources
    hold its pending pods; narrowest tier first and fullest first within a tier. None when the
    sub-group already runs wider than its tier. Where it runs is the lowest HyperNode holding its
    placed pods (`framework/session.go` `recoverAllocatedHyperNode`); fullness counts all its pods
    (`network_topology_aware.go` `getSubJobHyperNodeBinPackingScore`); the room test reads the
    HyperNodes as the session opened (`NetworkTopologyPlugin.has_room`). They are chosen upfront and
    tried in turn: a trial that fails leaves the nodes as they were, and the first that succeeds
    ends the search. The choice reads the nodes alone, so it stands until a pod moves.

    `evicting` (the nomination's gradient, `actions/utils/simulate.go` `BuildNominationPlanInDomain`
    asks with `PurposeEvict`): those whose allocatable resources hold the pending pods, widest
    tier first and at most `hypernode.gradient.evict.max-hypernodes` in all
    (`reverseAndCapEvictionGradients`); within a tier by name (upstream's order there is a map's)."""
    tier = sub.topology.tier if sub.topology is not None and sub.topology.mode == "hard" else None
    if tier is None:
        yield hypernode
        return
    hypernodes = session.hypernodes
    placed = {t.node for t in sub.tasks if t.status in ALLOCATED_STATUSES and t.node}
    lowest = lowest_containing(placed, hypernodes) if placed else None
    allocated = lowest.name if lowest is not None else None
    root = search_root(hypernodes, hypernode, tier, allocated)
    if root is None:
        return
    need = total(t.resreq for t in pending)
    request = total(t.resreq for t in sub.tasks)
    totals = session.hypernode_totals
    plugin = session.fw.plugin(NetworkTopologyPlugin.name)

    def has_room(hypernode: str) -> bool:
        if isinstance(plugin, NetworkTopologyPlugin):
            return plugin.has_room(hypernode, need)
        return fits(need, totals[hypernode].future_idle)

    def choose() -> list[str]:
        holding = [
            h.name
            for h in session.inside(root)
            if h.tier <= tier
            and (allocated is not None or has_room(h.name))
            and may_hold_a_pod(session, h.name, pending)
        ]
        return sorted(holding, key=lambda h: (hypernodes[h].tier, -fullness(session, h, request), h))

    def widest() -> list[str]:
        eligible = [
            h
            for h in session.inside(root)
            if h.tier <= tier and (allocated is not None or fits(need, totals[h.name].allocatable))
        ]
        cap = int(plugin.arguments.get("hypernode.gradient.evict.max-hypernodes", 8)) if plugin is not None else 0
        ordered = sorted(eligible, key=lambda h: (-h.tier, h.name))
        if cap > 0:
            ordered = _cap_per_tier(ordered, cap)
        return [h.name for h in ordered if may_hold_a_pod(session, h.name, pending)]

    shapes = tuple(sorted({t.shape for t in pending if not t.best_effort}))
    key = ("sub domains", evicting, root, allocated, tier, shape_of(need), shape_of(request), shapes)
    yield from session.while_still(key, widest if evicting else choose)


def _cap_per_tier(ordered: list[HyperNode], cap: int) -> list[HyperNode]:
    """`reverseAndCapEvictionGradients` on HyperNodes ordered widest tier first: whole tiers while
    they fit in `cap`, then the last ones of the tier that does not."""
    out: list[HyperNode] = []
    for tier in dict.fromkeys(h.tier for h in ordered):
        row = [h for h in ordered if h.tier == tier]
        room = cap - len(out)
        if room <= 0:
            break
        out.extend(row if len(row) <= room else row[len(row) - room :])
    return out


def fullness(session: Session, hypernode: str, request: Resources) -> float:
    """The network-topology-aware HyperNode binpack score (`HyperNodeOrderFn`, without its scale):
    `binpack_score` with the plugin's weights (the defaults when it is not configured)."""
    plugin = session.fw.plugin(NetworkTopologyPlugin.name)
    weights = plugin.binpack_weights if isinstance(plugin, NetworkTopologyPlugin) else binpack_weights({})
    totals = session.hypernode_totals.get(hypernode)
    return binpack_score(weights, (totals.allocatable, totals.used) if totals else None, request)


def may_hold_a_pod(session: Session, hypernode: str, pending: list[Task]) -> bool:
    """Whether some pending pod fits the most any one node of the HyperNode has free: when none
    does, a search there places nothing (the virtual root is always searched)."""
    peak = session.peak_future_idle(hypernode)
    if peak is None:
        return True
    shapes = {t.shape: t.resreq for t in pending if not t.best_effort}
    return any(fits(request, peak) for request in shapes.values())
