"""Domains named the way the stack names them.

Volcano's label discovery names HyperNodes `hypernode-<type>-tier<N>-<random>`, names that appear
nowhere in the stack, its summary or its picture. The what-if and `explain` say the stack's name
instead: a HyperNode holding exactly a named domain's nodes is that domain (its own name beside it
where it differs); one of a pool described by its shape is the pool and the tier label's value the
nodes share, the name a reader finds on the nodes. Where each replica runs is listed by node.
"""

from __future__ import annotations

from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL
from whatif.discovery import domain_name as discovered_name
from whatif.scheduler.model import HyperNode, Node, Task
from whatif.scheduler.topology import ROOT


def domain_names(hypernodes: dict[str, HyperNode], spec: PlatformSpec, nodes: dict[str, Node]) -> dict[str, str]:
    """HyperNode name -> how the reports name it (only where that differs from the name itself)."""
    topology = spec.topology
    if topology is None:
        return {}
    named = {members: name for name, members in topology.nodes_below_named.items() if members}
    out: dict[str, str] = {}
    for name, hypernode in hypernodes.items():
        if name == ROOT or not hypernode.nodes:
            continue
        domain = named.get(hypernode.nodes)
        if domain is not None:
            if domain != name:
                out[name] = f"{domain} (HyperNode {name})"
            continue
        pooled, value = _in_a_pool(hypernode, spec, nodes)
        if pooled:
            # The what-if's own HyperNodes (a dump without any) are named after the value already.
            own = discovered_name(hypernode.tier, value)
            out[name] = pooled if name == own else f"{pooled} (HyperNode {name})"
    return out


def _in_a_pool(hypernode: HyperNode, spec: PlatformSpec, nodes: dict[str, Node]) -> tuple[str, str]:
    """`<pool> <tier label>=<value>` when every node of the HyperNode is of one pool and shares the
    value of the HyperNode's tier label."""
    members = [nodes[n] for n in hypernode.nodes if n in nodes]
    if not members or not hypernode.tier_name:
        return "", ""
    pools = {
        name
        for name, pool in spec.pools.items()
        if all(all(m.labels.get(k) == v for k, v in pool.config.selector.items()) for m in members)
    }
    values = {m.labels.get(hypernode.tier_name) for m in members}
    if len(values) != 1 or None in values:
        return "", ""
    value = str(values.pop())
    where = f"pool {sorted(pools)[0]}, " if len(pools) == 1 else ""
    return f"{where}{hypernode.tier_name}={value}", value


def replica_nodes(tasks: list[Task]) -> list[list[str]]:
    """Where each replica of a model runs, in the order of its pods: a LeaderWorkerSet group's
    pods (one replica) together, any other pod a replica of its own."""
    groups: dict[object, list[str]] = {}
    for task in tasks:
        group = task.labels.get(LWS_GROUP_INDEX_LABEL)
        groups.setdefault(task.uid if group is None else (task.labels.get(LWS_NAME_LABEL), group), []).append(task.node)
    return list(groups.values())
