"""`InferenceGateway`: the shared Gateway, and per model behind it the pool, router and routes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi

from components.gateway.router import (
    router_config_map,
    router_deployment,
    router_destination_rule,
    router_pod_monitor,
    router_role,
    router_role_binding,
    router_service,
    router_service_account,
)
from components.gateway.routes import (
    gateway_namespace,
    http_route,
    inference_objectives,
    inference_pool,
    shared_gateway,
)
from components.kubernetes.objects import custom_resource
from components.kubernetes.resource import (
    CONFIG_MAP,
    DEPLOYMENT,
    NAMESPACE,
    ROLE,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
    KubernetesResource,
)
from config.spec.gateway import GatewaySpec, router_slices
from config.spec.images import router_image, router_pull_secret
from config.spec.platform import PlatformSpec
from config.upstream.inference_gateway import ISTIO_CLASSES


class InferenceGateway(pulumi.ComponentResource):
    """Every child is named after its model (and consumer), never a position, so adding a model
    or a consumer leaves the others' URNs as they are."""

    def __init__(
        self,
        name: str,
        spec: PlatformSpec,
        gateway: GatewaySpec,
        namespaces: dict[str, pulumi.Resource],
        secrets: Mapping[str, Sequence[pulumi.Resource]],
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`secrets`: the Secrets of each namespace (the mirror's login among them), which a router's
        pod must find when it starts."""
        super().__init__("volcano-platform:gateway:InferenceGateway", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if not gateway.config.gateway.existing:
            owners: dict[str, set[str]] = {}
            for served in gateway.models:
                for consumer in gateway.consumers[served]:
                    owners.setdefault(consumer.tenant, set()).add(spec.models[served].namespace)
            namespace = KubernetesResource(f"{name}-namespace", NAMESPACE, gateway_namespace(gateway), child)
            custom_resource(
                f"{name}-gateway",
                shared_gateway(gateway, owners),
                pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
            )
        image = router_image(spec.config)
        pull_secret = router_pull_secret(spec.config)
        for model_name in gateway.models:
            model = spec.models[model_name]
            prefix = f"{name}-{model.name}"
            opts_model = pulumi.ResourceOptions(parent=self, depends_on=[namespaces[model.namespace]])
            after_secrets = pulumi.ResourceOptions(
                parent=self, depends_on=[namespaces[model.namespace], *secrets.get(model.namespace, ())]
            )
            # One router per slice of a model with prefill and decode apart, behind the one Service.
            for index in router_slices(model):
                part = "" if index is None else f"-s{index}"
                KubernetesResource(
                    f"{prefix}-router{part}-config", CONFIG_MAP, router_config_map(gateway, model, index), opts_model
                )
                KubernetesResource(
                    f"{prefix}-router{part}",
                    DEPLOYMENT,
                    router_deployment(gateway, model, image, pull_secret, index),
                    after_secrets,
                )
            account = KubernetesResource(
                f"{prefix}-router-account", SERVICE_ACCOUNT, router_service_account(model), opts_model
            )
            role = KubernetesResource(f"{prefix}-router-role", ROLE, router_role(model), opts_model)
            KubernetesResource(
                f"{prefix}-router-binding",
                ROLE_BINDING,
                router_role_binding(model),
                pulumi.ResourceOptions(parent=self, depends_on=[account, role]),
            )
            tls = gateway.config.router.tls
            KubernetesResource(f"{prefix}-router-service", SERVICE, router_service(model, tls), opts_model)
            if tls and gateway.config.class_name in ISTIO_CLASSES:
                custom_resource(f"{prefix}-router-tls", router_destination_rule(model), opts_model)
            if spec.config.observability.enabled:
                custom_resource(
                    f"{prefix}-router-monitor", router_pod_monitor(model, spec.config.observability), opts_model
                )
            pool = custom_resource(f"{prefix}-pool", inference_pool(gateway, model), opts_model)
            after_pool = pulumi.ResourceOptions(parent=self, depends_on=[pool])
            for objective in inference_objectives(gateway, model):
                custom_resource(f"{prefix}-objective-{objective['metadata']['name']}", objective, after_pool)
            for consumer in gateway.consumers[model_name]:
                custom_resource(f"{prefix}-route-{consumer.tenant}", http_route(gateway, model, consumer), after_pool)
        self.register_outputs({})
