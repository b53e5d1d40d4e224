"""Per-model inference stacks: `SingleNodeModel` (Deployment) and `MultiNodeModel` (LWS)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.autoscaling import autoscaler_manifest
from components.kubernetes_objects import adopted, custom_resource
from components.kubernetes_types import DEPLOYMENT, HORIZONTAL_POD_AUTOSCALER, SERVICE, KubernetesResource
from components.workloads import (
    deployment_manifest,
    leaderworkerset_manifest,
    podgroup_manifest,
    rollout_timeouts,
    service_manifest,
)
from config.observability import ObservabilityConfig
from config.spec import ModelSpec


@dataclass(frozen=True)
class ModelDependencies:
    """What a model's objects must wait for: namespace, queue (Open), priority class, the
    Secrets it reads and, for LeaderWorkerSets, the LWS controller; and the monitoring setup its
    autoscaler queries."""

    namespace: pulumi.Resource
    queue: pulumi.Resource
    priority_class: pulumi.Resource
    secrets: Sequence[pulumi.Resource] = ()
    lws: pulumi.Resource | None = None
    observability: ObservabilityConfig | None = None

    def resources(self) -> list[pulumi.Resource]:
        return [self.namespace, self.queue, self.priority_class, *self.secrets]


def _service(name: str, model: ModelSpec, opts: pulumi.ResourceOptions) -> str:
    """Registers the model's Service; returns its name."""
    manifest = service_manifest(model)
    KubernetesResource(
        f"{name}-service",
        SERVICE,
        manifest,
        pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions.merge(
                pulumi.ResourceOptions(delete_before_replace=True), adopted("service" in model.config.adopt, manifest)
            ),
        ),
    )
    return str(manifest["metadata"]["name"])


SINGLE_NODE_TYPE = "volcano-platform:inference:SingleNodeModel"
MULTI_NODE_TYPE = "volcano-platform:inference:MultiNodeModel"


def _kind_change_alias(opts: pulumi.ResourceOptions | None, previous_type: str) -> pulumi.ResourceOptions:
    """A model that changes kind keeps its component name; the alias to the other kind carries over
    to the children, so a Service that keeps its name is updated in place instead of being
    created again (which would fail: the name is still taken) and then deleted."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=previous_type)]))


def _autoscaler(
    name: str, model: ModelSpec, observability: ObservabilityConfig | None, opts: pulumi.ResourceOptions
) -> None:
    """The model's KEDA ScaledObject or HPA, once its workload exists. The workload is rendered
    without `replicas`, which the autoscaler owns."""
    if model.config.autoscaling is None or observability is None:
        return
    manifest = autoscaler_manifest(model, observability)
    if manifest["kind"] == "HorizontalPodAutoscaler":
        KubernetesResource(f"{name}-hpa", HORIZONTAL_POD_AUTOSCALER, manifest, opts)
    else:
        custom_resource(f"{name}-scaledobject", manifest, opts)


class SingleNodeModel(pulumi.ComponentResource):
    """A Deployment of vLLM servers and the ClusterIP Service in front of them. Volcano makes one
    PodGroup per ReplicaSet (minMember 1) from the pods' queue annotation."""

    def __init__(
        self, name: str, model: ModelSpec, deps: ModelDependencies, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(SINGLE_NODE_TYPE, name, None, _kind_change_alias(opts, MULTI_NODE_TYPE))
        child = pulumi.ResourceOptions(parent=self, depends_on=deps.resources())
        manifest = deployment_manifest(model)
        create, update = rollout_timeouts(model)
        deployment = KubernetesResource(
            f"{name}-deployment",
            DEPLOYMENT,
            manifest,
            # The name is fixed: a replacement (e.g. a new selector) must free it first. Loading
            # weights outlasts the provider's 10-minute wait, so the wait follows the load budget.
            pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions.merge(
                    pulumi.ResourceOptions(
                        delete_before_replace=True, custom_timeouts=pulumi.CustomTimeouts(create=create, update=update)
                    ),
                    adopted("workload" in model.config.adopt, manifest),
                ),
            ),
        )
        _autoscaler(name, model, deps.observability, pulumi.ResourceOptions(parent=self, depends_on=[deployment]))
        self.register_outputs({"service": _service(name, model, child)})


class MultiNodeModel(pulumi.ComponentResource):
    """A LeaderWorkerSet (Ray leader + workers per group), the PodGroup that gang-schedules each
    group inside one network domain, and a Service for the leaders only."""

    def __init__(
        self, name: str, model: ModelSpec, deps: ModelDependencies, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(MULTI_NODE_TYPE, name, None, _kind_change_alias(opts, SINGLE_NODE_TYPE))
        depends = deps.resources()
        if deps.lws is not None:
            depends.append(deps.lws)
        child = pulumi.ResourceOptions(parent=self, depends_on=depends)
        if model.has_pod_group:
            group = podgroup_manifest(model)
            pod_group = custom_resource(
                f"{name}-podgroup",
                group,
                pulumi.ResourceOptions.merge(
                    pulumi.ResourceOptions(parent=self, depends_on=deps.resources(), delete_before_replace=True),
                    adopted("podGroup" in model.config.adopt, group),
                ),
            )
            # Pods must find their PodGroup when they are created.
            child = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[pod_group]))
        workload = leaderworkerset_manifest(model)
        lws = custom_resource(
            f"{name}-lws",
            workload,
            pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions.merge(
                    pulumi.ResourceOptions(delete_before_replace=True),
                    adopted("workload" in model.config.adopt, workload),
                ),
            ),
        )
        _autoscaler(name, model, deps.observability, pulumi.ResourceOptions(parent=self, depends_on=[lws]))
        self.register_outputs({"service": _service(name, model, child)})
