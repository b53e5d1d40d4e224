"""Checks of where a model's pods may go: topology constraints that can be enforced, and pods that fit one node."""

from __future__ import annotations

from decimal import Decimal

from config.errors import Problem, join_path
from config.schema.quantity import quantity_value
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec


def check_placement_options(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    if cfg.topology is not None and not cfg.multi_node:
        problems.append(
            Problem(
                join_path(path, "topology"),
                "a topology constraint applies to multi-node models only (one pod has no network span)",
                "remove `topology`, or set `nodesPerReplica` > 1",
            )
        )
    if cfg.topology is not None and cfg.multi_node:
        if spec.config.lws.gang_scheduling:
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "with `lws.gangScheduling: true` LWS makes the "
                    "PodGroups itself, without network topology, so this constraint would be ignored",
                    "turn `lws.gangScheduling` off (the platform then makes topology-aware PodGroups), "
                    "or remove the constraint",
                )
            )
        elif spec.topology is None:
            hard = cfg.topology.mode == "hard"
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "the stack describes no `topology`, so no HyperNodes exist to enforce this constraint"
                    + ("; a hard constraint would leave every replica Pending or unconstrained" if hard else ""),
                    "describe the network under `topology`, or remove the constraint",
                    severity="error" if hard else "warning",
                )
            )
        if cfg.topology.mode == "hard" and cfg.topology.highest_tier is None and cfg.topology.highest_tier_name is None:
            problems.append(
                Problem(
                    join_path(path, "topology", "mode"),
                    "hard mode without a tier applies no limit at all, which is not what `hard` promises",
                    "set `highestTier` (1 = leaf), or use `mode: soft`",
                    got="hard",
                )
            )
    problems += _peak_spill(spec, model)
    if cfg.multi_node and cfg.port == cfg.ray.port:
        problems.append(
            Problem(
                join_path(path, "port"),
                f"port {cfg.port} is also the Ray head port",
                "use another port (or move `ray.port`)",
                got=cfg.port,
            )
        )
    return problems


def _peak_spill(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A soft-placed autoscaled model whose replicas all fit the leaves at `minReplicas` but not at
    `maxReplicas`: the spill shows only at the peak, when the network matters most."""
    cfg = model.config
    scaling = cfg.autoscaling
    if not cfg.multi_node or cfg.topology is None or cfg.topology.mode != "soft" or scaling is None:
        return []
    if spec.topology is None or spec.topology.top_tier < 2:
        return []
    per_leaf = [d.pods_that_fit(model.gpus_per_pod) // model.gang.pods for d in spec.topology.at_tier(1)]
    in_leaves = sum(per_leaf)
    if not scaling.min_replicas <= in_leaves < scaling.max_replicas:
        return []
    return [
        Problem(
            join_path("models", model.name, "autoscaling", "maxReplicas"),
            f"even on an empty cluster only {in_leaves} replica(s) fit inside one leaf each; above that, at the peak "
            "the autoscaler reaches under load, replicas span leaves and run on the slower network",
            f"keep `maxReplicas` at {in_leaves} or below, add nodes to the leaves, or accept the spill at the peak",
            got=scaling.max_replicas,
            severity="warning",
        )
    ]


def check_node_capacity(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A pod must fit one node; with the node's allocatable unknown, only absurd requests are caught."""
    node = spec.config.cluster.node
    problems: list[Problem] = []
    for resource, requested, allocatable, absurd in (
        ("cpu", model.config.resources.cpu, node.cpu, Decimal(1024)),
        ("memory", model.config.resources.memory, node.memory, Decimal(64 * 2**40)),
    ):
        value = quantity_value(requested)
        limit = quantity_value(allocatable) if allocatable is not None else absurd
        if value > limit:
            known = allocatable is not None
            problems.append(
                Problem(
                    join_path("models", model.name, "resources", resource),
                    f"each pod requests {requested} {resource}, more than "
                    + (
                        f"a GPU node's allocatable {allocatable} (`cluster.node.{resource}`)"
                        if known
                        else "any node has"
                    )
                    + "; the pods would stay Pending",
                    "request at most what one node offers (spread the model over more nodes with nodesPerReplica)",
                    got=requested,
                )
            )
    return problems
