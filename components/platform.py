"""`GpuPlatform`: one cluster's scheduling plane, tenants, topology and models."""

from __future__ import annotations

import pulumi

from components.gateway.component import InferenceGateway
from components.inference.claims import WeightClaims
from components.inference.disaggregated import DisaggregatedModel
from components.inference.gang_reason import ClusterAccess
from components.inference.model_objects import ModelDependencies
from components.inference.multi_node import MultiNodeModel
from components.inference.single_node import SingleNodeModel
from components.isolation.component import TenantIsolation
from components.kubernetes.ledger import recording
from components.kubernetes.objects import force_ownership
from components.kubernetes.provider import BoundaryGate, kubernetes_provider
from components.observability.component import Observability
from components.scheduling.lws import LwsInstall
from components.scheduling.priority import PriorityClasses
from components.scheduling.queues import TenantQueues
from components.scheduling.topology import NetworkTopology
from components.scheduling.volcano import VolcanoInstall, VolcanoPolicy
from components.secrets import WorkloadSecrets
from config.checks.tenancy.rendered import check_rendered_boundary
from config.spec.gateway import wake_up_query
from config.spec.platform import PlatformSpec
from config.upstream.volcano import FLOOR_TIER_NAMES


class GpuPlatform(pulumi.ComponentResource):
    """Composes the components, each given only its slice of the spec. Every child resource name
    is prefixed with its component's name and encodes no position (tenant order, parent queue,
    leaf), so adding, removing or moving one entry leaves every other URN unchanged."""

    def __init__(self, name: str, spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__("volcano-platform:platform:GpuPlatform", name, None, opts)
        gate = BoundaryGate()
        provider = kubernetes_provider(
            f"{name}-kubernetes", spec.config.cluster, spec.stack, pulumi.ResourceOptions(parent=self), gate
        )
        with recording() as rendered:
            self._build(name, spec, provider)
        gate.judge(check_rendered_boundary(spec, rendered))
        self.endpoints = {
            m.name: f"http://{m.service_name}.{m.namespace}.svc:{m.api_port}" for m in spec.models.values()
        }
        self.queues = spec.queue_names
        self.register_outputs({"endpoints": self.endpoints, "queues": self.queues})

    def _build(self, name: str, spec: PlatformSpec, provider: pulumi.ProviderResource) -> None:
        # Children inherit the transformation: every object is applied forced when the stack says so.
        forced: list[pulumi.ResourceTransformation] = (
            [force_ownership] if spec.config.cluster.force_field_ownership else []
        )
        child = pulumi.ResourceOptions(parent=self, providers=[provider], transformations=forced)

        # What the Queues, HyperNodes and monitors wait for: the chart, or the policy of a Volcano
        # installed elsewhere.
        volcano = (
            VolcanoInstall("volcano", spec, child).release
            if spec.config.volcano.install
            else VolcanoPolicy("volcano", spec, child).scheduler_conf
        )
        classes = PriorityClasses("priority", spec.priority_classes, child)
        tenants = TenantQueues("tenants", spec, volcano, child)
        if spec.topology is not None and spec.config.topology is not None:
            tier_names = spec.config.volcano.version_tuple >= FLOOR_TIER_NAMES
            NetworkTopology("topology", spec.topology, spec.config.topology, volcano, tier_names, child)
        lws = LwsInstall("lws", spec, child) if spec.lws_install else None
        secrets = WorkloadSecrets("secrets", spec, dict(tenants.namespaces), child)
        TenantIsolation("isolation", spec, dict(tenants.namespaces), child)
        if spec.claims:
            WeightClaims("claims", spec, dict(tenants.namespaces), child)

        cluster = spec.config.cluster
        access = ClusterAccess(cluster.kubeconfig.get_secret_value() if cluster.kubeconfig else None, cluster.context)
        for model in spec.models.values():
            deps = ModelDependencies(
                namespace=tenants.namespaces[model.namespace],
                queue=tenants.queues[model.queue_tenant],
                priority_class=classes.classes[model.config.priority_class],
                secrets=secrets.by_namespace.get(model.namespace, ()),
                lws=lws.release if lws is not None and model.config.uses_lws else None,
                observability=spec.config.observability,
                wake_up=wake_up_query(spec.gateway, model),
                access=access,
            )
            if model.disaggregated:
                DisaggregatedModel(f"model-{model.name}", model, deps, child)
            else:
                kind = MultiNodeModel if model.multi_node else SingleNodeModel
                kind(f"model-{model.name}", model, deps, child)
        if spec.gateway is not None:
            InferenceGateway("gateway", spec, spec.gateway, dict(tenants.namespaces), secrets.by_namespace, child)
        if spec.config.observability.enabled:
            Observability("observability", spec, volcano, dict(tenants.namespaces), child)
