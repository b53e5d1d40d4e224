"""`Observability`: the scrape configuration, alert rules and dashboard of one platform.

prometheus-operator and Grafana are not the stack's (kube-prometheus-stack brings them): this
component only adds objects they pick up by label. Model autoscalers belong to the models
(`components/inference.py`).
"""

from __future__ import annotations

import pulumi

from components.kubernetes.objects import custom_resource
from components.kubernetes.resource import CONFIG_MAP, KubernetesResource
from components.observability.alerts import rules_manifest
from components.observability.dashboard import dashboard_configmap
from components.observability.monitors import pod_monitor_manifest, volcano_monitors
from config.spec.platform import PlatformSpec


class Observability(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        spec: PlatformSpec,
        volcano: pulumi.Resource,
        namespaces: dict[str, pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:observability:Observability", name, None, opts)
        config = spec.config.observability
        for model in spec.models.values():
            custom_resource(
                f"{name}-podmonitor-{model.name}",
                pod_monitor_manifest(model, config),
                pulumi.ResourceOptions(parent=self, depends_on=[namespaces[model.namespace]]),
            )
        if config.volcano:
            for monitor in volcano_monitors(config):
                kind = monitor["kind"].lower()
                custom_resource(
                    f"{name}-{kind}-{monitor['metadata']['name']}",
                    monitor,
                    pulumi.ResourceOptions(parent=self, depends_on=[volcano]),
                )
        if config.alerts.enabled:
            custom_resource(
                f"{name}-rules",
                rules_manifest(spec),
                pulumi.ResourceOptions(parent=self, depends_on=[volcano]),
            )
        if config.dashboard.enabled:
            manifest = dashboard_configmap(spec)
            KubernetesResource(f"{name}-dashboard", CONFIG_MAP, manifest, pulumi.ResourceOptions(parent=self))
        self.register_outputs({})
