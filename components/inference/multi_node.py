"""`MultiNodeModel`: a LeaderWorkerSet gang-scheduled per group by one PodGroup, and a Service for the leaders."""

from __future__ import annotations

import pulumi

from components.inference.leaderworkerset import leaderworkerset_manifest
from components.inference.model_objects import (
    MULTI_NODE_TYPE,
    SINGLE_NODE_TYPE,
    ModelDependencies,
    autoscaled_options,
    awaited,
    kind_change_alias,
    register_autoscaler,
    register_service,
)
from components.inference.podgroup import podgroup_manifest
from components.kubernetes.objects import adoptable, adopted, custom_resource, merged
from config.spec.model import ModelSpec


class MultiNodeModel(pulumi.ComponentResource):
    """A LeaderWorkerSet (Ray leader + workers per group), the PodGroup that gang-schedules each
    group inside one network domain, and a Service for the leaders only."""

    def __init__(
        self, name: str, model: ModelSpec, deps: ModelDependencies, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(MULTI_NODE_TYPE, name, None, kind_change_alias(opts, SINGLE_NODE_TYPE))
        depends = deps.resources()
        if deps.lws is not None:
            depends.append(deps.lws)
        child = pulumi.ResourceOptions(parent=self, depends_on=depends)
        if model.has_pod_group:
            group = adoptable("podGroup" in model.config.adopt, podgroup_manifest(model))
            pod_group = custom_resource(
                f"{name}-podgroup",
                group,
                merged(
                    pulumi.ResourceOptions(parent=self, depends_on=deps.resources(), delete_before_replace=True),
                    adopted("podGroup" in model.config.adopt, group),
                ),
            )
            # Pods must find their PodGroup when they are created.
            child = merged(child, pulumi.ResourceOptions(depends_on=[pod_group]))
        workload = adoptable("workload" in model.config.adopt, leaderworkerset_manifest(model))
        lws = custom_resource(
            f"{name}-lws",
            workload,
            merged(
                child,
                pulumi.ResourceOptions(delete_before_replace=True),
                awaited(model, deps.access),
                adopted("workload" in model.config.adopt, workload),
                autoscaled_options(model),
            ),
        )
        register_autoscaler(name, model, deps, pulumi.ResourceOptions(parent=self, depends_on=[lws]))
        self.register_outputs({"service": register_service(name, model, child)})
