"""`DisaggregatedModel`: prefill and decode apart, one PodGroup per slice and one LeaderWorkerSet
per role of each slice, with a Service in front of the decode servers."""

from __future__ import annotations

import pulumi

from components.inference.leaderworkerset import leaderworkerset_manifest
from components.inference.model_objects import (
    DISAGGREGATED_TYPE,
    ModelDependencies,
    autoscaled_options,
    awaited,
    register_autoscaler,
    register_service,
)
from components.inference.podgroup import slice_podgroup_manifest
from components.kubernetes.objects import custom_resource, merged
from config.spec.model import ModelSpec


class DisaggregatedModel(pulumi.ComponentResource):
    """Children are named after their slice and role (`<model>-s0-prefill-lws`), so adding a
    slice adds objects and leaves the others' URNs as they are."""

    def __init__(
        self, name: str, model: ModelSpec, deps: ModelDependencies, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(DISAGGREGATED_TYPE, name, None, opts)
        depends = deps.resources()
        if deps.lws is not None:
            depends.append(deps.lws)
        child = pulumi.ResourceOptions(parent=self, depends_on=depends)
        for index in range(model.config.replicas):
            group = custom_resource(
                f"{name}-s{index}-podgroup",
                slice_podgroup_manifest(model, index),
                pulumi.ResourceOptions(parent=self, depends_on=deps.resources(), delete_before_replace=True),
            )
            # Pods must find their PodGroup when they are created.
            after_group = merged(child, pulumi.ResourceOptions(depends_on=[group]))
            for role in model.role_views:
                view = role.for_slice(index)
                prefix = f"{name}-s{index}-{view.serving_role}"
                lws = custom_resource(
                    f"{prefix}-lws",
                    leaderworkerset_manifest(view),
                    merged(
                        after_group,
                        pulumi.ResourceOptions(delete_before_replace=True),
                        awaited(view, deps.access),
                        autoscaled_options(view),
                    ),
                )
                register_autoscaler(prefix, view, deps, pulumi.ResourceOptions(parent=self, depends_on=[lws]))
        self.register_outputs({"service": register_service(name, model, child)})
