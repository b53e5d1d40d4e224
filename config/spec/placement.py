"""Placement: where each model's replicas can go in the network topology, and whether they fit at all.

Checked per model against the GPU inventory the topology describes: in hard mode every replica
(one LWS group) must fit inside one domain at or below the allowed tier; in soft mode the check
names the tier a model spills to when the leaves are too small. Capacities come from per-domain
histograms, cached per (tier, GPUs per pod), so the cost does not grow with nodes x models. (Quotas,
a model against its queue's capability, are checked in `config.checks.quotas`.)"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from config.errors import Problem, join_path
from config.spec.model import ModelSpec
from config.spec.topology import Domain, Topology


@dataclass(frozen=True)
class Placement:
    """Where a model's replicas can go; `planned_gpus` is a greedy plan for the picture."""

    model: str
    mode: str
    """`hard`, `soft` or `any` (no constraint)."""
    tier: int | None
    """Hard: the allowed tier. Soft: the lowest tier all replicas fit. None: the whole cluster."""
    replicas: int
    replicas_that_fit: int
    planned_gpus: dict[str, int] = field(default_factory=dict)
    """Domain name -> GPUs the plan puts there (leaves and their ancestors)."""

    @property
    def fits(self) -> bool:
        return self.replicas_that_fit >= self.replicas


class _Capacity:
    """Replica slots per domain, cached per (tier, GPUs per pod)."""

    def __init__(self, topology: Topology):
        self.topology = topology
        self._pods: dict[tuple[int, int], tuple[tuple[Domain, int], ...]] = {}

    def pods_per_domain(self, tier: int, gpus_per_pod: int) -> tuple[tuple[Domain, int], ...]:
        key = (tier, gpus_per_pod)
        if key not in self._pods:
            self._pods[key] = tuple(
                (domain, domain.pods_that_fit(gpus_per_pod)) for domain in self.topology.at_tier(tier)
            )
        return self._pods[key]

    def replicas_at(self, tier: int, model: ModelSpec) -> tuple[int, list[tuple[Domain, int]]]:
        """Total replicas that fit at a tier, and per-domain replica slots (largest first)."""
        slots = [(domain, pods // model.gang.pods) for domain, pods in self.pods_per_domain(tier, model.gpus_per_pod)]
        slots.sort(key=lambda item: -item[1])
        return sum(n for _, n in slots), slots


def plan_placements(
    models: Iterable[ModelSpec], topology: Topology | None, gpu_resource: str
) -> tuple[dict[str, Placement], list[Problem]]:
    """Placement of every GPU model in the topology (counting the cluster's `gpu_resource`), and the
    problems found (errors and spill warnings)."""
    placements: dict[str, Placement] = {}
    problems: list[Problem] = []
    if topology is None:
        return placements, problems
    capacity = _Capacity(topology)
    planned: dict[str, int] = {}  # GPUs planned per domain so far, across models
    for model in models:
        if model.gpus_per_pod == 0 or model.config.planned_replicas == 0:
            continue
        path = join_path("models", model.name)
        if model.gpu_resource != gpu_resource:
            problems.append(
                Problem(
                    join_path(path, "resources", "gpuResource"),
                    f"placement not checked: the topology counts `{gpu_resource}`, the model "
                    f"requests `{model.gpu_resource}`",
                    "use the cluster's GPU resource, or check placement by hand",
                    severity="warning",
                )
            )
            continue
        placement, found = _place(model, topology, capacity, path, planned)
        placements[model.name] = placement
        problems += found
    return placements, problems


def _need(model: ModelSpec) -> str:
    return (
        f"{model.gang.pods} node(s) with {model.gpus_per_pod} free GPU(s) each"
        if model.multi_node
        else f"a node with {model.gpus_per_pod} free GPU(s)"
    )


def _tier_label(topology: Topology, tier: int) -> str:
    return f"tier {tier} ({topology.tiers[tier - 1]})"


def _place(
    model: ModelSpec, topology: Topology, capacity: _Capacity, path: str, planned: dict[str, int]
) -> tuple[Placement, list[Problem]]:
    replicas = model.config.planned_replicas
    constraint = model.config.topology if model.multi_node else None
    problems: list[Problem] = []
    cluster_fit = topology.cluster_pods_that_fit(model.gpus_per_pod) // model.gang.pods

    if model.gpus_per_pod > topology.max_gpus_per_node:
        problems.append(
            Problem(
                join_path(path, "resources", "gpus"),
                f"each pod needs {model.gpus_per_pod} GPUs but the largest node has {topology.max_gpus_per_node}",
                "request at most the GPUs of one node per pod (spread the model over more nodes with nodesPerReplica)",
                got=model.gpus_per_pod,
            )
        )
        return Placement(model.name, "any", None, replicas, 0), problems

    if constraint is None or (constraint.mode == "hard" and model.highest_tier is None):
        placement = Placement(model.name, "any" if constraint is None else "hard", None, replicas, cluster_fit)
        if not placement.fits:
            problems.append(_cluster_too_small(model, cluster_fit, path))
        return placement, problems

    if constraint.mode == "hard":
        assert model.highest_tier is not None
        tier = model.highest_tier
        total, slots = capacity.replicas_at(tier, model)
        placement = Placement(model.name, "hard", tier, replicas, total, _plan(topology, model, slots, planned))
        if total == 0:
            best, best_pods = _best_domain(capacity, tier, model)
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    f"hard constraint at {_tier_label(topology, tier)} cannot be met: one replica "
                    f"needs {_need(model)} inside one domain, and the best domain `{best}` has room "
                    f"for only {best_pods} such pod(s)",
                    "allow a higher tier (`highestTier`), use `mode: soft`, lower GPUs per pod, or "
                    "add nodes to a domain",
                )
            )
        elif total < replicas:
            problems.append(
                Problem(
                    replicas_key(model, path),
                    f"only {total} of {replicas} replica(s) fit domains at "
                    f"{_tier_label(topology, tier)}; each needs {_need(model)} inside one domain",
                    f"lower `{replicas_name(model)}`, allow a higher tier, or add nodes",
                    got=replicas,
                )
            )
        return placement, problems

    # Soft: the lowest tier where every replica fits; spilling past tier 1 is a warning.
    limit = model.highest_tier or topology.top_tier
    for tier in range(1, topology.top_tier + 1):
        total, slots = capacity.replicas_at(tier, model)
        if total >= replicas:
            placement = Placement(model.name, "soft", tier, replicas, total, _plan(topology, model, slots, planned))
            if tier > 1:
                problems.append(
                    Problem(
                        join_path(path, "topology"),
                        f"not every replica fits one {_tier_label(topology, 1)} domain; replicas will "
                        f"spill to {_tier_label(topology, tier)}"
                        + (" beyond the preferred tier" if tier > limit else ""),
                        "add nodes to the leaves, lower GPUs per pod, or accept the slower network",
                        severity="warning",
                    )
                )
            return placement, problems
    placement = Placement(model.name, "soft", None, replicas, cluster_fit)
    if cluster_fit >= replicas:
        problems.append(
            Problem(
                join_path(path, "topology"),
                "no single top-tier domain holds a replica; pods will span top-tier domains",
                "add nodes to the domains, or accept the slower network",
                severity="warning",
            )
        )
    else:
        problems.append(_cluster_too_small(model, cluster_fit, path))
    return placement, problems


def _cluster_too_small(model: ModelSpec, cluster_fit: int, path: str) -> Problem:
    replicas = model.config.planned_replicas
    if cluster_fit == 0:
        # Not even one replica fits: fewer replicas would not help; a smaller replica would.
        return Problem(
            join_path(path, "nodesPerReplica") if model.multi_node else join_path(path, "resources", "gpus"),
            f"one replica needs {_need(model)}, more than the whole cluster has",
            "lower `nodesPerReplica` or GPUs per pod, or add nodes to the topology",
            got=model.gang.pods if model.multi_node else model.gpus_per_pod,
        )
    return Problem(
        replicas_key(model, path),
        f"only {cluster_fit} of {replicas} replica(s) fit the whole cluster; each needs {_need(model)}",
        f"lower `{replicas_name(model)}`, or add nodes to the topology",
        got=replicas,
    )


def _best_domain(capacity: _Capacity, tier: int, model: ModelSpec) -> tuple[str, int]:
    best = max(capacity.pods_per_domain(tier, model.gpus_per_pod), key=lambda item: item[1])
    return best[0].name, best[1]


def _plan(
    topology: Topology, model: ModelSpec, slots: list[tuple[Domain, int]], planned: dict[str, int]
) -> dict[str, int]:
    """Greedy plan for the picture: fill the domains with the most room left after the models
    planned before this one; what fits nowhere goes to the roomiest domain anyway (and shows up
    as a shortage). Each domain and its ancestors are credited."""
    gpus_per_replica = model.gang.pods * model.gpus_per_pod

    def room(domain: Domain, slot_count: int) -> int:
        free = max(domain.gpus - planned.get(domain.name, 0), 0)
        return min(slot_count, free // gpus_per_replica)

    mine: dict[str, int] = defaultdict(int)
    remaining = model.config.planned_replicas
    for domain, slot_count in sorted(slots, key=lambda item: -room(*item)):
        take = min(remaining, room(domain, slot_count))
        if take > 0:
            remaining -= take
            _credit(topology, domain.name, take * gpus_per_replica, mine)
    if remaining > 0 and slots:
        _credit(topology, max(slots, key=lambda item: item[1])[0].name, remaining * gpus_per_replica, mine)
    for name, gpus in mine.items():
        planned[name] = planned.get(name, 0) + gpus
    return dict(mine)


def _credit(topology: Topology, name: str | None, gpus: int, planned: dict[str, int]) -> None:
    while name is not None:
        planned[name] += gpus
        name = topology.domains[name].parent


def replicas_name(model: ModelSpec) -> str:
    """The key that sets how many replicas the checks count: `replicas`, or under an
    autoscaler the most it may start."""
    return "autoscaling.maxReplicas" if model.config.autoscaling is not None else "replicas"


def replicas_key(model: ModelSpec, path: str) -> str:
    return join_path(path, *replicas_name(model).split("."))
