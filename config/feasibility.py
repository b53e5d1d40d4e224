"""Placement feasibility: can each model be placed at all, given the topology and its queue?

Checked per model against the GPU inventory the topology describes: in hard mode every replica
(one LWS group) must fit inside one domain at or below the allowed tier; in soft mode the check
names the tier a model spills to when the leaves are too small. A model must also fit its queue's
capability. Capacities come from per-domain histograms, cached per (tier, GPUs per pod), so the
cost does not grow with nodes x models.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from config.errors import Problem, join_path
from config.quantity import format_amount, quantity_value
from config.spec import ModelSpec, PlatformSpec
from config.topology_tree import Domain, Topology


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
        slots = [
            (domain, pods // model.pods_per_replica) for domain, pods in self.pods_per_domain(tier, model.gpus_per_pod)
        ]
        slots.sort(key=lambda item: -item[1])
        return sum(n for _, n in slots), slots


def plan_placements(spec: PlatformSpec) -> tuple[dict[str, Placement], list[Problem]]:
    """Placement of every GPU model, and the problems found (errors and spill warnings)."""
    topology = spec.topology
    placements: dict[str, Placement] = {}
    problems: list[Problem] = []
    if topology is None:
        return placements, problems
    capacity = _Capacity(topology)
    planned: dict[str, int] = {}  # GPUs planned per domain so far, across models
    for model in spec.models.values():
        if model.gpus_per_pod == 0 or model.config.planned_replicas == 0:
            continue
        path = join_path("models", model.name)
        if model.gpu_resource != spec.gpu_resource:
            problems.append(
                Problem(
                    join_path(path, "resources", "gpuResource"),
                    f"placement not checked: the topology counts `{spec.gpu_resource}`, the model "
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
        f"{model.pods_per_replica} node(s) with {model.gpus_per_pod} free GPU(s) each"
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
    cluster_fit = topology.cluster_pods_that_fit(model.gpus_per_pod) // model.pods_per_replica

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
                    _replicas_key(model, path),
                    f"only {total} of {replicas} replica(s) fit domains at "
                    f"{_tier_label(topology, tier)}; each needs {_need(model)} inside one domain",
                    f"lower `{_replicas_name(model)}`, allow a higher tier, or add nodes",
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
            got=model.pods_per_replica if model.multi_node else model.gpus_per_pod,
        )
    return Problem(
        _replicas_key(model, path),
        f"only {cluster_fit} of {replicas} replica(s) fit the whole cluster; each needs {_need(model)}",
        f"lower `{_replicas_name(model)}`, or add nodes to the topology",
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
    gpus_per_replica = model.pods_per_replica * model.gpus_per_pod

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


def _replicas_name(model: ModelSpec) -> str:
    """The key that sets how many replicas the checks count: `replicas`, or under an
    autoscaler the most it may start."""
    return "autoscaling.maxReplicas" if model.config.autoscaling is not None else "replicas"


def _replicas_key(model: ModelSpec, path: str) -> str:
    return join_path(path, *_replicas_name(model).split("."))


def check_queue_capacity(spec: PlatformSpec) -> list[Problem]:
    """Each model must fit its queue's capability (and every ancestor's); warn when a queue's
    models together exceed it."""
    problems: list[Problem] = []
    totals: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for model in spec.models.values():
        caps = _effective_capability(spec, model.tenant)
        per_pod = {res: quantity_value(q) for res, q in model.pod_requests.items()}
        gang = {res: v * model.pods_per_replica for res, v in per_pod.items()}
        total = {res: v * model.config.planned_replicas for res, v in gang.items()}
        path = join_path("models", model.name)
        for resource, (cap, owner) in caps.items():
            if resource not in gang:
                continue
            queue = spec.tenants[owner].queue_name
            if gang[resource] > cap:
                problems.append(
                    Problem(
                        path,
                        f"one replica needs {format_amount(gang[resource])} {resource} but queue "
                        f"`{queue}` is capped at {format_amount(cap)}; it can never start",
                        f"raise `{join_path('tenants', owner, 'queue', 'capability', resource)}`, or shrink the model",
                    )
                )
            elif total[resource] > cap:
                problems.append(
                    Problem(
                        _replicas_key(model, path),
                        f"{model.config.planned_replicas} replica(s) need {format_amount(total[resource])} "
                        f"{resource} but queue `{queue}` is capped at {format_amount(cap)}",
                        f"lower `{_replicas_name(model)}`, or raise the queue's capability",
                        got=model.config.planned_replicas,
                    )
                )
        for resource, value in total.items():
            totals[model.tenant][resource] += value
    for tenant, usage in totals.items():
        for resource, (cap, owner) in _effective_capability(spec, tenant).items():
            if usage.get(resource, Decimal(0)) > cap:
                problems.append(
                    Problem(
                        join_path("tenants", tenant, "queue", "capability"),
                        f"the tenant's models together need {format_amount(usage[resource])} "
                        f"{resource}, more than queue `{spec.tenants[owner].queue_name}` allows "
                        f"({format_amount(cap)}); "
                        "some will stay Pending",
                        "raise the capability or run fewer replicas",
                        severity="warning",
                    )
                )
    return problems


def _effective_capability(spec: PlatformSpec, tenant_name: str) -> dict[str, tuple[Decimal, str]]:
    """Per resource: the tightest capability along the queue's ancestry, and the tenant it is on."""
    caps: dict[str, tuple[Decimal, str]] = {}
    name: str | None = tenant_name
    while name is not None and name in spec.tenants:
        tenant = spec.tenants[name]
        for resource, quantity in tenant.config.queue.capability.items():
            value = quantity_value(quantity)
            if resource not in caps or value < caps[resource][0]:
                caps[resource] = (value, name)
        name = tenant.parent
    return caps
