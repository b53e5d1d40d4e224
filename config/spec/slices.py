"""Placement of the slices of models with prefill and decode apart: each slice inside one domain of
its tier, each role instance inside a narrower one (`config.spec.joint_plan` places them first,
as the most constrained gangs). Alone, a model whose slices do not fit the empty cluster is an
error at the key to change; together with the others, slices without room and slices that cannot
grow to their peak inside their own domain are warnings (`check` refuses a proven shortage)."""

from __future__ import annotations

from config.errors import Problem, join_path
from config.spec.free_gpus import FreeGpus
from config.spec.gang import RoleGang
from config.spec.joint_plan import Placement, RoleDemand, SliceDemand, plan_jointly
from config.spec.model import ModelSpec
from config.spec.topology import Topology


def slice_demand(model: ModelSpec) -> SliceDemand:
    """A model with prefill and decode apart, as the plan places it: each slice inside a domain of
    its hard tier, each role instance inside one of the role's hard tier."""
    topology = model.config.topology
    tier = model.highest_tier if topology is not None and topology.mode == "hard" else None

    def role_tier(role: RoleGang) -> int | None:
        """A role's tier, never wider than the slice's (a wider one is refused on its own)."""
        if role.mode != "hard" or role.highest_tier is None:
            return None
        return role.highest_tier if tier is None else min(role.highest_tier, tier)

    return SliceDemand(
        model=model.name,
        tier=tier,
        slices=model.config.replicas,
        roles=tuple(
            RoleDemand(
                role=role.role,
                pods=role.instance.pods,
                gpus=int(view.gpus_per_pod),
                tier=role_tier(role),
                required=role.min_instances,
                peak=role.max_instances,
            )
            for role, view in zip(model.slice_gang.roles, model.role_views, strict=True)
        ),
        pools=model.pools,
    )


def slices_alone(model: ModelSpec, topology: Topology, gpu_resource: str) -> tuple[int, list[Problem], SliceDemand]:
    """The slices of a model on the empty cluster: (how many fit, an error when not all do, the
    demand). A model on another GPU resource is not placed (the caller warns)."""
    path = join_path("models", model.name)
    demand = slice_demand(model)
    if model.gpu_resource != gpu_resource:
        return 0, [], demand
    largest = topology.max_gpus_per_node
    for view in model.role_views:
        if view.gpus_per_pod > largest:
            return (
                0,
                [
                    Problem(
                        join_path(view.key_path, "resources", "gpus"),
                        f"each {view.serving_role} pod needs {view.gpus_per_pod} GPUs but the largest node has "
                        f"{largest}",
                        "request at most the GPUs of one node per pod (spread an instance over nodes with "
                        "nodesPerInstance)",
                        got=view.gpus_per_pod,
                    )
                ],
                demand,
            )
    fit = demand.slices - plan_jointly([], topology, [demand]).unplaced[model.name]
    if fit == demand.slices:
        return fit, [], demand
    if fit == 0:
        return fit, [_slice_misfit(model, demand, topology)], demand
    return (
        fit,
        [
            Problem(
                join_path(path, "replicas"),
                f"only {fit} of {demand.slices} slice(s) fit the cluster at their minimum; "
                + _slice_need(demand, topology),
                "lower `replicas` (slices), lower the roles' instances, or add nodes",
                got=demand.slices,
            )
        ],
        demand,
    )


def _slice_need(demand: SliceDemand, topology: Topology) -> str:
    where = f"inside one {topology.tier_label(demand.tier)} domain" if demand.tier else "in the cluster"
    roles = ", ".join(
        f"{r.required} {r.role} instance(s) of {r.pods} pod(s) x {r.gpus} GPU(s)"
        + (f" each inside one {topology.tier_label(r.tier)} domain" if r.tier else "")
        for r in demand.roles
    )
    return f"each slice needs {roles}, {where}"


def _slice_misfit(model: ModelSpec, demand: SliceDemand, topology: Topology) -> Problem:
    """Not one slice fits: blame a role whose one instance fits no domain of its tier, else the slice."""
    free = FreeGpus(topology)
    for role, view in zip(demand.roles, model.role_views, strict=True):
        if role.tier is None:
            continue
        best = max((free.slots(d.name, role.gpus) for d in topology.at_tier(role.tier)), default=0)
        if best < role.pods:
            return Problem(
                join_path(view.key_path, "topology"),
                f"hard constraint at {topology.tier_label(role.tier)} cannot be met: one {role.role} instance "
                f"needs {role.pods} pod(s) x {role.gpus} GPU(s) inside one domain, and the best has room for "
                f"{best} such pod(s); the slice's gang would stay Pending",
                "allow the role a higher tier, lower its nodes or GPUs per instance, or add nodes to a domain",
            )
    return Problem(
        join_path(model.key_path, "topology"),
        f"no slice fits: {_slice_need(demand, topology)}, and no domain holds that",
        "allow the slice a higher tier, lower the roles' minimum instances, or add nodes to a domain",
    )


def slice_problems(models: dict[str, ModelSpec], placements: dict[str, Placement], topology: Topology) -> list[Problem]:
    """Slices that fit alone but not with the other models, or that cannot grow to their peak."""
    problems: list[Problem] = []
    for name, model in models.items():
        placement = placements[name]
        demand = slice_demand(model)
        if placement.unplaced and placement.replicas_that_fit == placement.replicas:
            problems.append(
                Problem(
                    join_path(model.key_path, "replicas"),
                    f"the models cannot all run at once: {placement.unplaced} of `{name}`'s {placement.replicas} "
                    f"slice(s) find no room once the other models are placed ({_slice_need(demand, topology)})",
                    "lower the slices or the roles' minimum instances (here or of the models it shares nodes with), "
                    "or add nodes",
                    got=placement.replicas,
                    severity="warning",
                )
            )
        if placement.unplaced_peak:
            grown = [r.role for r in demand.roles if r.peak > r.required]
            problems.append(
                Problem(
                    join_path(model.key_path, "roles", grown[0] if grown else "prefill", "autoscaling", "maxInstances"),
                    f"{placement.unplaced_peak} slice(s) of `{name}` cannot grow to their peak inside their own "
                    "domain; Volcano adds a slice's instances only under the domain its gang was given, so the "
                    "extra instances would wait",
                    "lower the roles' `maxInstances`, or leave room in the slices' domains",
                    severity="warning",
                )
            )
    return problems
