"""The topology config resolved into domains and nodes, with GPU capacity per domain.

Capacity is kept as a histogram (GPUs per node -> node count) per domain, so that "how many pods
needing G GPUs fit in this domain" is a sum over a handful of entries instead of a scan of every
node; placement checks stay fast on clusters of ten thousand nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from config.errors import Problem, join_path
from config.schema.names import dns_subdomain_problem
from config.sections.fabric import MAX_TOPOLOGY_NODES
from config.sections.topology import DomainConfig, NodeGroup, TopologyConfig
from config.spec.noderange import RangeError, count_names, expand


@dataclass(frozen=True)
class Domain:
    name: str
    tier: int
    path: str
    """Key path of the domain in the stack file."""
    parent: str | None
    children: tuple[str, ...]
    nodes: tuple[str, ...]
    """Leaf domains: their nodes, in config order."""
    capacity: tuple[tuple[int, int], ...]
    """(GPUs per node, number of nodes) over every node in and below this domain."""
    pool: str | None = None
    """The node pool the domain belongs to (stacks with `pools`)."""
    generated: bool = False
    """Made from a pool's shape: a domain of the plan, named by this program; the cluster's own come
    from the nodes' labels (discovery)."""

    @property
    def node_count(self) -> int:
        return sum(count for _, count in self.capacity)

    @property
    def gpus(self) -> int:
        return sum(gpus * count for gpus, count in self.capacity)

    def pods_that_fit(self, gpus_per_pod: int) -> int:
        """Pods of `gpus_per_pod` GPUs this domain can host at once, node by node."""
        if gpus_per_pod <= 0:
            return self.node_count
        return sum(count * (gpus // gpus_per_pod) for gpus, count in self.capacity)


@dataclass(frozen=True)
class Topology:
    tiers: tuple[str, ...]
    """Label key per tier, tier 1 first."""
    domains: dict[str, Domain]
    """Every domain, parents before children, in config order."""
    node_leaf: dict[str, str]
    """Node name -> its leaf domain."""
    node_gpus: dict[str, int]
    """Named nodes only: nodes of pools described by their labels' shape have no names here."""
    hyper_nodes: str
    pools: tuple[str, ...] = ()
    """Node pools (stacks with `pools`): each is a domain above the top tier (`pool_tier`), the
    root of its part of the tree; a pool outside any fabric holds its nodes directly."""
    _by_tier: dict[int, tuple[Domain, ...]] = field(default_factory=dict, repr=False)

    @property
    def top_tier(self) -> int:
        return len(self.tiers)

    @property
    def pool_tier(self) -> int:
        """The tier of the pool domains: one above the top tier. They are no network domains: no
        label, no HyperNode."""
        return len(self.tiers) + 1

    @cached_property
    def network_domains(self) -> tuple[Domain, ...]:
        """The domains of the network (every tier), parents first: what labels and HyperNodes stand for."""
        return tuple(d for d in self.domains.values() if d.tier <= len(self.tiers))

    @cached_property
    def named_domains(self) -> tuple[Domain, ...]:
        """The network domains the stack names (not generated from a pool's shape), parents first."""
        return tuple(d for d in self.network_domains if not d.generated)

    @cached_property
    def nodes_below_named(self) -> dict[str, frozenset[str]]:
        """Each named domain -> the nodes below it: the members of its HyperNode, however the
        cluster builds it."""
        below: dict[str, set[str]] = {d.name: set() for d in self.named_domains}
        for node, leaf in self.node_leaf.items():
            domain: str | None = leaf
            while domain is not None and domain in below:
                below[domain].add(node)
                domain = self.domains[domain].parent
        return {name: frozenset(nodes) for name, nodes in below.items()}

    @cached_property
    def roots(self) -> tuple[Domain, ...]:
        """The domains directly under the cluster: the pools, or without pools the top tier."""
        return tuple(d for d in self.domains.values() if d.parent is None)

    def pool_roots(self, pools: tuple[str, ...] | None) -> tuple[Domain, ...]:
        """The pool domains of `pools` (every root when None or without pools)."""
        if pools is None or not self.pools:
            return self.roots
        return tuple(d for d in self.roots if d.name in pools)

    def tier_of_label(self, label: str) -> int | None:
        return self.tiers.index(label) + 1 if label in self.tiers else None

    def tier_label(self, tier: int) -> str:
        """A tier as messages name it: `tier 1 (<label>)`."""
        return f"tier {tier} ({self.tiers[tier - 1]})"

    def at_tier(self, tier: int) -> tuple[Domain, ...]:
        if tier not in self._by_tier:
            self._by_tier[tier] = tuple(d for d in self.domains.values() if d.tier == tier)
        return self._by_tier[tier]

    def labels_of(self, node: str) -> dict[str, str]:
        """The tier labels a node carries: its leaf and every ancestor."""
        labels: dict[str, str] = {}
        name: str | None = self.node_leaf[node]
        while name is not None:
            domain = self.domains[name]
            if domain.tier > len(self.tiers):
                break
            labels[self.tiers[domain.tier - 1]] = domain.name
            name = domain.parent
        return labels

    @cached_property
    def capacity(self) -> tuple[tuple[int, int], ...]:
        """Histogram of the whole cluster (the virtual root above the top tier)."""
        total: Counter[int] = Counter()
        for domain in self.roots:
            for gpus, count in domain.capacity:
                total[gpus] += count
        return tuple(sorted(total.items()))

    @property
    def total_gpus(self) -> int:
        return sum(g * c for g, c in self.capacity)

    @property
    def max_gpus_per_node(self) -> int:
        return max((g for g, c in self.capacity if c), default=0)

    def cluster_pods_that_fit(self, gpus_per_pod: int) -> int:
        if gpus_per_pod <= 0:
            return sum(count for _, count in self.capacity)
        return sum(count * (gpus // gpus_per_pod) for gpus, count in self.capacity)


def resolve_topology(
    config: TopologyConfig, cluster_gpus_per_node: int, base: str = "topology"
) -> tuple[Topology | None, list[Problem]]:
    """Expand ranges, place every node in exactly one leaf and sum capacities bottom-up."""
    problems: list[Problem] = []
    listed = _listed_nodes(config.domains.values())
    if listed > MAX_TOPOLOGY_NODES:
        problem = Problem(
            join_path(base, "domains"),
            f"the domains' node ranges name {listed} nodes, more than the {MAX_TOPOLOGY_NODES} a topology may hold",
            "check the ranges' bounds (`gpu-[1-64]`): a typo in one bound multiplies the names",
        )
        return None, [problem]
    domains: dict[str, Domain] = {}
    node_leaf: dict[str, str] = {}
    node_gpus: dict[str, int] = {}
    top = len(config.tiers)
    default_gpus = config.gpus_per_node if config.gpus_per_node is not None else cluster_gpus_per_node

    def visit(name: str, cfg: DomainConfig, tier: int, parent: str | None, path: str, gpus: int) -> Counter[int]:
        if name in domains:
            problems.append(
                Problem(
                    path,
                    f"domain `{name}` is defined twice (also at {domains[name].path}); "
                    "a domain can have only one parent",
                    "give each domain a unique name",
                )
            )
            return Counter()
        gpus = cfg.gpus_per_node if cfg.gpus_per_node is not None else gpus
        capacity: Counter[int] = Counter()
        nodes: list[str] = []
        if tier == 1:
            if cfg.domains:
                problems.append(
                    Problem(
                        join_path(path, "domains"),
                        f"`{name}` is a tier-1 (leaf) domain and cannot have child domains",
                        f"list its nodes under `nodes`, or add a tier to `topology.tiers` (there are {top})",
                    )
                )
            for index, entry in enumerate(cfg.nodes):
                pattern, node_gpu_count = (entry.names, entry.gpus) if isinstance(entry, NodeGroup) else (entry, gpus)
                entry_path = join_path(path, "nodes", index)
                duplicates: list[str] = []
                for node in _expand_nodes(pattern, entry_path, problems):
                    if node in node_leaf:
                        duplicates.append(node)
                        continue
                    node_leaf[node] = name
                    node_gpus[node] = node_gpu_count
                    nodes.append(node)
                    capacity[node_gpu_count] += 1
                if duplicates:
                    listed = ", ".join(duplicates[:3]) + (", ..." if len(duplicates) > 3 else "")
                    problems.append(
                        Problem(
                            entry_path,
                            f"{len(duplicates)} node(s) ({listed}) are already in leaf `{node_leaf[duplicates[0]]}`",
                            "list every node in exactly one leaf domain",
                            got=pattern,
                        )
                    )
            if not cfg.nodes:
                problems.append(
                    Problem(
                        path,
                        f"leaf domain `{name}` has no nodes",
                        "list its nodes under `nodes`, or remove the domain",
                        severity="warning",
                    )
                )
        else:
            if cfg.nodes:
                problems.append(
                    Problem(
                        join_path(path, "nodes"),
                        f"`{name}` is a tier-{tier} domain; only tier-1 (leaf) domains hold nodes",
                        "move the nodes into a leaf domain under `domains`",
                    )
                )
            if not cfg.domains:
                problems.append(
                    Problem(
                        path,
                        f"tier-{tier} domain `{name}` has no child domains; every branch must "
                        f"reach tier 1 ({top} tiers are declared)",
                        "add its leaf domains under `domains`, or declare fewer tiers",
                    )
                )
        # Register the domain before its children so the dict stays parents-first.
        domains[name] = Domain(name, tier, path, parent, tuple(cfg.domains), tuple(nodes), ())
        for child, child_cfg in cfg.domains.items():
            capacity += visit(child, child_cfg, tier - 1, name, join_path(path, "domains", child), gpus)
        domains[name] = Domain(
            name, tier, path, parent, tuple(cfg.domains), tuple(nodes), tuple(sorted(capacity.items()))
        )
        return capacity

    if not config.domains:
        problems.append(
            Problem(join_path(base, "domains"), "no domains", "describe at least one leaf domain with nodes")
        )
    for name, cfg in config.domains.items():
        visit(name, cfg, top, None, join_path(base, "domains", name), default_gpus)

    if any(p.severity == "error" for p in problems):
        return None, problems
    return Topology(config.tiers, domains, node_leaf, node_gpus, config.hyper_nodes), problems


def _listed_nodes(domains: Iterable[DomainConfig]) -> int:
    """How many names the domains' node ranges hold, counted without expanding any (a malformed
    or overlong range counts nothing here and is reported at its own key)."""
    total = 0
    stack = list(domains)
    while stack:
        domain = stack.pop()
        stack.extend(domain.domains.values())
        for entry in domain.nodes:
            try:
                names = count_names(entry.names if isinstance(entry, NodeGroup) else entry)
            except RangeError:
                continue
            if names <= MAX_TOPOLOGY_NODES:  # a longer range is refused at its own key, unexpanded
                total += names
    return total


def _expand_nodes(pattern: str, path: str, problems: list[Problem]) -> Iterator[str]:
    try:
        names = expand(pattern)
    except RangeError as exc:
        problems.append(Problem(path, f"node range `{pattern}` is invalid: {exc}", "write e.g. `gpu-worker-[1-64]`"))
        return
    for node in names:
        problem = dns_subdomain_problem(node)
        if problem:
            problems.append(Problem(path, f"node name `{node}` {problem}", "use the node's Kubernetes name"))
            return
        yield node
