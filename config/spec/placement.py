"""Placement: where each model's replicas go in the network topology, and whether they fit.

Two questions, answered in this order. Alone: does each model fit the empty cluster at all (in
hard mode every replica, one LWS group, inside one domain at or below the allowed tier; in soft mode
the tier it spills to)? Its capacities come from per-domain histograms, cached per (tier, GPUs per
pod), so the cost does not grow with nodes x models. Together: can every model run its replicas at
once (`config.spec.joint_plan`)? The joint plan is what the summary, `summary.json`, the picture and
the checks all read, so they give one verdict per domain: `short` when replicas the stack requires
have no room in any arrangement (a warning the render shows, an error for `check`, which the deploy
workflow runs), `tight` when an autoscaler's peak does not fit, or a shortage could not be proven
(a warning), else `ok`. (Quotas, a model against its queue's
capability, are checked in `config.checks.queues`.)"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from config.errors import Problem, join_path
from config.spec.free_gpus import CLUSTER
from config.spec.joint_plan import Demand, JointPlan, Mode, Placement, plan_jointly
from config.spec.model import ModelSpec
from config.spec.slices import slice_problems, slices_alone
from config.spec.topology import Domain, Topology

Status = Literal["ok", "tight", "short"]


class _Capacity:
    """Replica slots per domain of the empty cluster, cached per (tier, GPUs per pod, pools)."""

    def __init__(self, topology: Topology):
        self.topology = topology
        self._pods: dict[tuple[int, int, tuple[str, ...] | None], tuple[tuple[Domain, int], ...]] = {}

    def pods_per_domain(
        self, tier: int, gpus_per_pod: int, pools: tuple[str, ...] | None = None
    ) -> tuple[tuple[Domain, int], ...]:
        key = (tier, gpus_per_pod, pools)
        if key not in self._pods:
            self._pods[key] = tuple(
                (domain, domain.pods_that_fit(gpus_per_pod))
                for domain in self.topology.at_tier(tier)
                if pools is None or domain.pool in pools
            )
        return self._pods[key]

    def replicas_at(self, tier: int, model: ModelSpec) -> int:
        """Replicas that fit domains of one tier, each inside one domain."""
        return sum(pods // model.gang.pods for _, pods in self.pods_per_domain(tier, model.gpus_per_pod, model.pools))

    def best_domain(self, tier: int, model: ModelSpec) -> tuple[str, int]:
        found = self.pods_per_domain(tier, model.gpus_per_pod, model.pools)
        if not found:
            return "(none in its pools)", 0
        best = max(found, key=lambda item: item[1])
        return best[0].name, best[1]

    def anywhere(self, model: ModelSpec) -> tuple[int, int]:
        """(Replicas that fit where the model may run, each inside one of its pools or anywhere
        without pools; the most GPUs of one node there)."""
        if model.pools is None or not self.topology.pools:
            fit = self.topology.cluster_pods_that_fit(model.gpus_per_pod) // model.gang.pods
            return fit, self.topology.max_gpus_per_node
        roots = self.topology.pool_roots(model.pools)
        fit = sum(root.pods_that_fit(model.gpus_per_pod) // model.gang.pods for root in roots)
        return fit, max((g for root in roots for g, c in root.capacity if c), default=0)


def plan_placements(
    models: Iterable[ModelSpec], topology: Topology | None, gpu_resource: str
) -> tuple[dict[str, Placement], list[Problem]]:
    """Placement of every GPU model in the topology (counting the cluster's `gpu_resource`), and the
    problems found: a model that cannot fit alone, models that cannot all run at once, spills."""
    placements: dict[str, Placement] = {}
    problems: list[Problem] = []
    if topology is None:
        return placements, problems
    capacity = _Capacity(topology)
    alone: dict[str, Placement] = {}
    demands: list[Demand] = []
    planned = {m.name: m for m in models if m.gpus_per_pod > 0 and m.config.planned_replicas > 0}
    # A role without GPUs is refused by the checks; the plan leaves such a model out.
    sliced = {n: m for n, m in planned.items() if m.disaggregated and all(v.gpus_per_pod for v in m.role_views)}
    planned = {name: m for name, m in planned.items() if not m.disaggregated}  # slices are planned apart
    slice_demands = []
    for model in sliced.values():
        fit, found, demand = slices_alone(model, topology, gpu_resource)
        mode: Mode = "hard" if demand.tier is not None else "any"
        alone[model.name] = Placement(model.name, mode, demand.tier, demand.slices, fit)
        problems += found
        if model.gpu_resource == gpu_resource and fit:
            slice_demands.append(demand)
    for model in planned.values():
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
        placement, found = _alone(model, topology, capacity, path)
        alone[model.name] = placement
        problems += found
        if not any(p.severity == "error" for p in found):
            demands.append(_demand(model, placement.mode))
    joint = plan_jointly(demands, topology, slice_demands)
    for name, placement in alone.items():
        placements[name] = _with_plan(placement, joint, topology)
    problems += _joint_problems(planned, {n: p for n, p in placements.items() if n in planned}, topology)
    problems += slice_problems(sliced, placements, topology)
    return placements, problems


def _mode(model: ModelSpec) -> Mode:
    constraint = model.config.topology if model.multi_node else None
    if constraint is None or (constraint.mode == "hard" and model.highest_tier is None):
        return "any" if constraint is None else "hard"
    return "hard" if constraint.mode == "hard" else "soft"


def required_replicas(model: ModelSpec) -> int:
    """Replicas that must run at once: `replicas`, or the autoscaler's `minReplicas`."""
    return model.min_replicas


def _demand(model: ModelSpec, mode: Mode) -> Demand:
    hard_without_tier = mode == "hard" and model.highest_tier is None
    return Demand(
        model=model.name,
        mode="any" if hard_without_tier else mode,
        tier=model.highest_tier,
        pods=model.gang.pods,
        gpus=model.gpus_per_pod,
        required=required_replicas(model),
        peak=model.config.planned_replicas,
        pools=model.pools,
    )


def _need(model: ModelSpec) -> str:
    return (
        f"{model.gang.pods} node(s) with {model.gpus_per_pod} free GPU(s) each"
        if model.multi_node
        else f"a node with {model.gpus_per_pod} free GPU(s)"
    )


def _alone(model: ModelSpec, topology: Topology, capacity: _Capacity, path: str) -> tuple[Placement, list[Problem]]:
    """The model on the empty cluster: its errors when even that does not hold it."""
    replicas = model.config.planned_replicas
    mode = _mode(model)
    cluster_fit, largest = capacity.anywhere(model)
    if model.gpus_per_pod > largest:
        where = f" of its pools ({', '.join(model.pools)})" if model.pools is not None and topology.pools else ""
        problem = Problem(
            join_path(path, "resources", "gpus"),
            f"each pod needs {model.gpus_per_pod} GPUs but the largest node{where} has {largest}",
            "request at most the GPUs of one node per pod (spread the model over more nodes with nodesPerReplica)",
            got=model.gpus_per_pod,
        )
        return Placement(model.name, "any", None, replicas, 0), [problem]
    if mode != "hard" or model.highest_tier is None:
        placement = Placement(model.name, mode, None, replicas, cluster_fit)
        return placement, [] if cluster_fit >= replicas else [_cluster_too_small(model, cluster_fit, path)]
    tier = model.highest_tier
    total = capacity.replicas_at(tier, model)
    placement = Placement(model.name, "hard", tier, replicas, total)
    if total == 0:
        best, best_pods = capacity.best_domain(tier, model)
        return placement, [
            Problem(
                join_path(path, "topology"),
                f"hard constraint at {topology.tier_label(tier)} cannot be met: one replica "
                f"needs {_need(model)} inside one domain, and the best domain `{best}` has room "
                f"for only {best_pods} such pod(s)",
                "allow a higher tier (`highestTier`), use `mode: soft`, lower GPUs per pod, or add nodes to a domain",
            )
        ]
    if total < replicas:
        return placement, [
            Problem(
                replicas_key(model, path),
                f"only {total} of {replicas} replica(s) fit domains at "
                f"{topology.tier_label(tier)}; each needs {_need(model)} inside one domain",
                f"lower `{replicas_name(model)}`, allow a higher tier, or add nodes",
                got=replicas,
            )
        ]
    return placement, []


def _with_plan(placement: Placement, joint: JointPlan, topology: Topology) -> Placement:
    domains = joint.domains.get(placement.model, [])
    tier = placement.tier
    if placement.mode == "soft" and domains:
        used = [topology.top_tier + 1 if d == CLUSTER else topology.domains[d].tier for d in domains]
        tier = max(used) if max(used) <= topology.top_tier else None
    return Placement(
        placement.model,
        placement.mode,
        tier,
        placement.replicas,
        placement.replicas_that_fit,
        dict(joint.gpus.get(placement.model, {})),
        joint.unplaced[placement.model],
        joint.unplaced_peak[placement.model],
        joint.proven,
        tuple(domains),
    )


def _joint_problems(
    models: dict[str, ModelSpec], placements: dict[str, Placement], topology: Topology
) -> list[Problem]:
    problems: list[Problem] = []
    crowded = sorted(name for name, p in placements.items() if p.planned_gpus)

    def others_than(name: str) -> str:
        named = [f"`{n}`" for n in crowded if n != name]
        return ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "") or "the other models"

    for name, placement in placements.items():
        model = models[name]
        path = join_path("models", name)
        if not (placement.unplaced or placement.unplaced_peak):
            problems += _spill(model, placement, topology, path)
            continue
        others = others_than(name)
        if placement.unplaced:
            required = required_replicas(model)
            key = (
                join_path(path, "autoscaling", "minReplicas")
                if model.config.autoscaling
                else join_path(path, "replicas")
            )
            text = (
                f"the models cannot all run at once: {placement.unplaced} of the {required} replica(s) `{name}` "
                f"requires find no room once {others} are placed (each needs {_need(model)}"
                + (f" inside one domain at {topology.tier_label(placement.tier)})" if placement.tier else ")")
            )
            if placement.shortage_proven:
                # A warning here, so the render shows the short domains; `check` fails on it.
                problems.append(
                    Problem(
                        key,
                        text + "; no arrangement of the replicas holds them all, so some would stay Pending",
                        "lower the replicas (here or of the models it shares nodes with), allow a higher tier, or add "
                        "nodes; replicas that may wait for room belong above `autoscaling.minReplicas`",
                        got=required,
                        severity="warning",
                    )
                )
            else:
                problems.append(
                    Problem(
                        key,
                        text + "; the plan's search was cut off, so another arrangement may still hold them",
                        "check the placement with fewer replicas, or add nodes",
                        got=required,
                        severity="warning",
                    )
                )
        if placement.unplaced_peak:
            problems.append(
                Problem(
                    join_path(path, "autoscaling", "maxReplicas"),
                    f"at their peak the models do not all fit: {placement.unplaced_peak} of `{name}`'s replicas above "
                    f"minReplicas find no room once {others} are placed; they would wait until others scale down",
                    "lower `maxReplicas`, or add nodes",
                    got=placement.replicas,
                    severity="warning",
                )
            )
        problems += _spill(model, placement, topology, path)
    return problems


def _spill(model: ModelSpec, placement: Placement, topology: Topology, path: str) -> list[Problem]:
    """Soft models whose replicas the plan could not keep inside one leaf."""
    if placement.mode != "soft" or not placement.planned_gpus or placement.tier == 1:
        return []
    limit = model.highest_tier or topology.top_tier
    if placement.tier is None:
        return [
            Problem(
                join_path(path, "topology"),
                "no single top-tier domain holds a replica; pods will span top-tier domains",
                "add nodes to the domains, or accept the slower network",
                severity="warning",
            )
        ]
    return [
        Problem(
            join_path(path, "topology"),
            f"not every replica fits one {topology.tier_label(1)} domain; replicas will "
            f"spill to {topology.tier_label(placement.tier)}"
            + (" beyond the preferred tier" if placement.tier > limit else ""),
            "add nodes to the leaves, lower GPUs per pod, or accept the slower network",
            severity="warning",
        )
    ]


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


def shortages(placements: Iterable[Placement]) -> list[str]:
    """The models whose required replicas have no room in any arrangement: what `check` refuses."""
    return sorted(p.model for p in placements if p.unplaced and p.shortage_proven)


def domain_status(placements: Iterable[Placement], topology: Topology) -> dict[str, Status]:
    """One verdict per domain, the one every view shows: `short` where replicas the stack requires
    have no room (the plan proved it), `tight` where an autoscaler's peak has none (or a shortage
    was not proven), `ok` elsewhere. A hard model's shortage is in the domains of its tier; any
    other model's is the whole cluster's (its top-tier domains)."""
    status: dict[str, Status] = {name: "ok" for name in topology.domains}
    for placement in placements:
        if not (placement.unplaced or placement.unplaced_peak):
            continue
        verdict: Status = "short" if placement.unplaced and placement.shortage_proven else "tight"
        tier = placement.tier if placement.mode == "hard" and placement.tier else topology.top_tier
        for domain in topology.at_tier(tier):
            if status[domain.name] != "short":
                status[domain.name] = verdict
    return status


def replicas_name(model: ModelSpec) -> str:
    """The key that sets how many replicas the checks count: `replicas`, or under an
    autoscaler the most it may start."""
    return "autoscaling.maxReplicas" if model.config.autoscaling is not None else "replicas"


def replicas_key(model: ModelSpec, path: str) -> str:
    return join_path(path, *replicas_name(model).split("."))
