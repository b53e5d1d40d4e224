"""What every model has besides its workload: the Service, the autoscaler, and the objects they wait for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.inference.autoscaler import autoscaler_manifest
from components.inference.deployment import rollout_timeouts
from components.inference.gang_reason import ClusterAccess, gang_error_hook
from components.inference.service import service_manifest
from components.kubernetes.objects import adoptable, adopted, custom_resource, merged
from components.kubernetes.resource import HORIZONTAL_POD_AUTOSCALER, SERVICE, KubernetesResource
from config.sections.observability import ObservabilityConfig
from config.spec.model import ModelSpec


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
    wake_up: str | None = None
    """The query of the requests its router holds (a model behind the gateway)."""
    access: ClusterAccess | None = None
    """How the stack reaches the cluster, to say why a gang did not start."""

    def resources(self) -> list[pulumi.Resource]:
        return [self.namespace, self.queue, self.priority_class, *self.secrets]


def register_service(name: str, model: ModelSpec, opts: pulumi.ResourceOptions) -> str:
    """Registers the model's Service; returns its name."""
    manifest = adoptable("service" in model.config.adopt, service_manifest(model))
    KubernetesResource(
        f"{name}-service",
        SERVICE,
        manifest,
        merged(
            opts, pulumi.ResourceOptions(delete_before_replace=True), adopted("service" in model.config.adopt, manifest)
        ),
    )
    return str(manifest["metadata"]["name"])


SINGLE_NODE_TYPE = "volcano-platform:inference:SingleNodeModel"
MULTI_NODE_TYPE = "volcano-platform:inference:MultiNodeModel"
DISAGGREGATED_TYPE = "volcano-platform:inference:DisaggregatedModel"


def kind_change_alias(opts: pulumi.ResourceOptions | None, previous_type: str) -> pulumi.ResourceOptions:
    """A model that changes kind keeps its component name; the alias to the other kind carries over
    to the children, so a Service that keeps its name is updated in place instead of being
    created again (which would fail: the name is still taken) and then deleted."""
    return merged(opts or pulumi.ResourceOptions(), pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=previous_type)]))


def awaited(model: ModelSpec, access: ClusterAccess | None = None) -> pulumi.ResourceOptions:
    """How long `pulumi up` waits for a model's workload to run: its placing and pulling budget,
    then its load budget (a Deployment's rollout, a LeaderWorkerSet's `Available`). Given the
    cluster's access, a LeaderWorkerSet in a PodGroup of the platform says, when the wait fails,
    what its PodGroup says (`gang_reason`)."""
    create, update = rollout_timeouts(model)
    waits = pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=create, update=update))
    if access is None or not (model.has_pod_group or model.slice_index is not None):
        return waits
    return merged(
        waits, gang_error_hook(access, model.namespace, model.workload_name, model.pod_group_name, model.name)
    )


def register_autoscaler(name: str, model: ModelSpec, deps: ModelDependencies, opts: pulumi.ResourceOptions) -> None:
    """The model's KEDA ScaledObject or HPA, once its workload exists. The workload is rendered
    without `replicas`, which the autoscaler owns."""
    if model.config.autoscaling is None or deps.observability is None:
        return
    manifest = autoscaler_manifest(model, deps.observability, deps.wake_up)
    if manifest["kind"] == "HorizontalPodAutoscaler":
        KubernetesResource(f"{name}-hpa", HORIZONTAL_POD_AUTOSCALER, manifest, opts)
    else:
        custom_resource(f"{name}-scaledobject", manifest, opts)


def autoscaled_options(model: ModelSpec) -> pulumi.ResourceOptions:
    """`ignoreChanges` on `spec.replicas` under an autoscaler. With Server-Side Apply the provider
    then sends the live count for the ignored field while Pulumi still owns it, and drops the field
    once another manager (the autoscaler) owns it (`handleSSAIgnoreFields`, pulumi-kubernetes
    provider/pkg/await/await.go): switching a running model to autoscaling keeps its replicas, and
    no `pulumi up` undoes the autoscaler. (Leaving the field out instead gave it up at the switch,
    and the workload dropped to the default of one replica.)"""
    if model.config.autoscaling is None:
        return pulumi.ResourceOptions()
    return pulumi.ResourceOptions(ignore_changes=["spec.replicas"])
