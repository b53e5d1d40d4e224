"""Node pools resolved: each pool's nodes as a part of the topology tree, and the accelerator type
tenants' quotas per type name it by.

A pool is a domain above the network's top tier. A pool on a fabric holds its domains: the named
ones of `topology.domains`, or domains generated from its shape (`domains` per tier,
`nodesPerDomain`), whose names are this program's own (`<pool>/tier<N>-<index>`) and never reach
the cluster (label discovery builds the HyperNodes from the nodes' labels). A pool outside any
fabric holds its nodes directly. Placement then counts, for a model, only the pools it may use.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from config.errors import Problem, join_path
from config.sections.fabric import MAX_TOPOLOGY_NODES
from config.sections.pools import PoolConfig
from config.sections.stack import StackConfig
from config.spec.topology import Domain, Topology
from config.upstream.cloud_topology import node_group_example

PRODUCT_LABEL = "nvidia.com/gpu.product"
"""The label GPU feature discovery sets to the GPU's product name (NVIDIA's
`k8s-device-plugin`, `docs/gpu-feature-discovery/README.md`)."""


@dataclass(frozen=True)
class Pool:
    name: str
    config: PoolConfig
    resource: str
    """The extended resource of its devices (the cluster's GPU resource unless it says otherwise)."""
    gpus_per_node: int
    labels: dict[str, str]
    """Labels every node of the pool is known to carry: its selector, and the product label."""

    @property
    def taints(self) -> tuple[dict[str, str], ...]:
        return tuple(t.model_dump(by_alias=True, exclude_none=True) for t in self.config.taints)

    @property
    def product(self) -> str | None:
        return self.config.accelerator.product if self.config.accelerator else None


def resolve_pools(config: StackConfig) -> tuple[dict[str, Pool], list[Problem]]:
    pools: dict[str, Pool] = {}
    problems: list[Problem] = []
    gpu_resource = config.cluster.gpu_resource
    preset = config.topology.preset if config.topology is not None else None
    for name, pool in config.pools.items():
        accelerator = pool.accelerator
        resource = (accelerator.resource if accelerator else None) or gpu_resource
        labels = dict(pool.selector)
        if accelerator and accelerator.product and resource.startswith("nvidia.com/"):
            labels.setdefault(PRODUCT_LABEL, accelerator.product)
        pools[name] = Pool(name, pool, resource, accelerator.count if accelerator else 0, labels)
    for (first, a), (second, b) in _pairs(pools):
        mine, theirs = a.config.selector, b.config.selector
        if all(theirs.get(k) == v for k, v in mine.items()) or all(mine.get(k) == v for k, v in theirs.items()):
            problems.append(
                Problem(
                    join_path("pools", second, "selector"),
                    f"the selector of pool `{second}` and that of `{first}` select the same nodes "
                    "(one is contained in the other)",
                    f"give each pool a label only its nodes carry, e.g. {node_group_example(preset)}",
                    got=dict(b.config.selector),
                )
            )
    return pools, problems


def _pairs(pools: dict[str, Pool]) -> list[tuple[tuple[str, Pool], tuple[str, Pool]]]:
    items = list(pools.items())
    return [(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))]


def pooled_topology(
    config: StackConfig, pools: dict[str, Pool], named: Topology | None, problems: list[Problem]
) -> Topology | None:
    """The tree with a domain per pool above the top tier: named domains under the pool that names
    them, generated domains under a pool with a shape, nodes directly under a pool outside any fabric."""
    if not pools:
        return named
    tiers = config.topology.tiers if config.topology else ()
    hyper_nodes = config.topology.hyper_nodes if config.topology else "none"
    gpu_resource = config.cluster.gpu_resource
    named_domains = named.domains if named else {}
    domains: dict[str, Domain] = {}
    claimed: dict[str, str] = {}
    for name, pool in pools.items():
        path = join_path("pools", name)
        gpus = pool.gpus_per_node if pool.resource == gpu_resource else 0
        shape = pool.config.topology
        if name in named_domains:
            problems.append(
                Problem(path, f"pool `{name}` has the name of a topology domain", "give the pool another name")
            )
            continue
        if shape is not None and not tiers:
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "the stack has no `topology`, so there are no tiers to place the pool's domains in",
                    "describe the tiers under `topology` (`tiers`, or a `preset`), or remove the pool's `topology`",
                )
            )
            continue
        if shape is None:
            capacity = ((gpus, pool.config.largest),) if pool.config.largest else ()
            domains[name] = Domain(name, len(tiers) + 1, path, None, (), (), capacity, name)
            continue
        if shape.named:
            children = _claim_named(name, shape.named, named, claimed, problems)
            subtree = [d for top in children for d in _subtree(named_domains, top)]
            capacity_count: Counter[int] = Counter()
            for top in children:
                capacity_count.update(dict(named_domains[top].capacity))
            domains[name] = Domain(
                name, len(tiers) + 1, path, None, children, (), tuple(sorted(capacity_count.items())), name
            )
            for domain in subtree:
                parent = name if domain.parent is None else domain.parent
                domains[domain.name] = replace(domain, parent=parent, pool=name)
            continue
        generated = _shaped(name, pool, gpus, len(tiers), problems)
        if generated is None:
            continue
        domains.update(generated)
    for unclaimed in named_domains.values():
        if unclaimed.parent is None and unclaimed.name not in claimed:
            problems.append(
                Problem(
                    unclaimed.path,
                    f"top-tier domain `{unclaimed.name}` is in no pool",
                    "name it in the `topology.named` of the pool its nodes belong to "
                    f"(`pools.<pool>.topology.named: [{unclaimed.name}]`)",
                )
            )
    if any(p.severity == "error" for p in problems):
        return None
    if (
        config.topology is not None
        and hyper_nodes == "explicit"
        and any(p.config.topology is not None and p.config.topology.shaped for p in pools.values())
    ):
        problems.append(
            Problem(
                "topology.hyperNodes",
                "`explicit` HyperNodes need every node named, and a pool with a shape names none",
                "use `discovery` (Volcano's controller builds the HyperNodes from the nodes' labels)",
                got="explicit",
            )
        )
        return None
    return Topology(
        tiers,
        domains,
        dict(named.node_leaf) if named else {},
        dict(named.node_gpus) if named else {},
        hyper_nodes,
        tuple(pools),
    )


def _claim_named(
    pool: str, names: tuple[str, ...], named: Topology | None, claimed: dict[str, str], problems: list[Problem]
) -> tuple[str, ...]:
    out: list[str] = []
    for index, top in enumerate(names):
        path = join_path("pools", pool, "topology", "named", index)
        domain = named.domains.get(top) if named else None
        if domain is None or domain.parent is not None:
            known = (
                ", ".join(d.name for d in named.at_tier(named.top_tier))
                if named
                else "none (`topology.domains` is empty)"
            )
            problems.append(
                Problem(
                    path,
                    f"`{top}` is not a top-tier domain of `topology.domains`",
                    f"name one of: {known}",
                    got=top,
                )
            )
            continue
        if top in claimed:
            problems.append(
                Problem(path, f"`{top}` is already in pool `{claimed[top]}`", "put each domain in one pool", got=top)
            )
            continue
        claimed[top] = pool
        out.append(top)
    return tuple(out)


def _subtree(domains: dict[str, Domain], top: str) -> list[Domain]:
    out = [domains[top]]
    for child in domains[top].children:
        out += _subtree(domains, child)
    return out


def _shaped(name: str, pool: Pool, gpus: int, tiers: int, problems: list[Problem]) -> dict[str, Domain] | None:
    """The pool's domains as its shape describes them, parents first."""
    shape = pool.config.topology
    assert shape is not None and shape.nodes_per_domain is not None
    per_leaf: int = shape.nodes_per_domain
    path = join_path("pools", name, "topology")
    counts = shape.domains
    if len(counts) != tiers:
        problems.append(
            Problem(
                join_path(path, "domains"),
                f"{len(counts)} tier count(s) for {tiers} topology tier(s)",
                "give the number of the pool's domains at each tier, tier 1 first",
                got=list(counts),
            )
        )
        return None
    for tier in range(1, tiers):
        if counts[tier - 1] % counts[tier]:
            problems.append(
                Problem(
                    join_path(path, "domains", tier - 1),
                    f"{counts[tier - 1]} tier-{tier} domains do not divide evenly among {counts[tier]} tier-{tier + 1} "
                    "domain(s)",
                    "give counts where each tier's is a multiple of the next (a regular tree); describe an irregular "
                    "fabric by name in `topology.domains`",
                    got=counts[tier - 1],
                )
            )
            return None
    total = counts[0] * shape.nodes_per_domain
    if total > MAX_TOPOLOGY_NODES:
        problems.append(
            Problem(
                path,
                f"the pool's shape holds {total} nodes ({counts[0]} tier-1 domains of {shape.nodes_per_domain}), more "
                f"than the {MAX_TOPOLOGY_NODES} a topology may hold",
                "check `domains` and `nodesPerDomain`",
                got=list(counts),
            )
        )
        return None
    size_key, size = ("maxNodes", pool.config.max_nodes) if pool.config.autoscaled else ("nodes", pool.config.nodes)
    if size is not None and size != total:
        problems.append(
            Problem(
                join_path("pools", name, size_key),
                f"the pool's shape holds {total} nodes ({counts[0]} tier-1 domains of {shape.nodes_per_domain}), "
                f"not {size}",
                "make the shape and the size agree (an autoscaled pool's shape is the one at `maxNodes`)",
                got=size,
            )
        )
        return None
    width = {tier: len(str(counts[tier - 1])) for tier in range(1, tiers + 1)}
    out: dict[str, Domain] = {name: Domain(name, tiers + 1, path, None, (), (), (), name)}
    leaf_capacity = ((gpus, per_leaf),)

    def domain_name(tier: int, index: int) -> str:
        return f"{name}/tier{tier}-{index + 1:0{width[tier]}d}"

    def build(tier: int, index: int, parent: str) -> tuple[str, int]:
        own = domain_name(tier, index)
        out[own] = Domain(own, tier, path, parent, (), (), (), name, generated=True)
        if tier == 1:
            children: tuple[str, ...] = ()
            nodes = per_leaf
        else:
            per = counts[tier - 2] // counts[tier - 1]
            built = [build(tier - 1, index * per + k, own) for k in range(per)]
            children = tuple(child for child, _ in built)
            nodes = sum(n for _, n in built)
        capacity = ((gpus, nodes),) if tier > 1 else leaf_capacity
        out[own] = Domain(own, tier, path, parent, children, (), capacity, name, generated=True)
        return own, nodes

    tops = [build(tiers, index, name) for index in range(counts[tiers - 1])]
    out[name] = Domain(
        name, tiers + 1, path, None, tuple(t for t, _ in tops), (), ((gpus, sum(n for _, n in tops)),), name
    )
    return out


def pool_type(pool: Pool) -> str:
    """The accelerator type tenants' quotas per type name: the pool's own, else its name."""
    accelerator = pool.config.accelerator
    return (accelerator.type if accelerator and accelerator.type else None) or pool.name
