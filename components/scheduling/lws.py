"""`LwsInstall`: the LeaderWorkerSet controller."""

from __future__ import annotations

from typing import Any

import pulumi

from components.kubernetes.objects import installed_chart
from components.kubernetes.resource import KubernetesResource
from components.secrets import chart_login, platform_pull_secret
from config.schema.merge import deep_merge
from config.sections.stack import StackConfig
from config.spec.images import lws_chart, lws_image_repository, lws_pull_secret
from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_NAMESPACE, LWS_RELEASE
from config.upstream.volcano import VOLCANO_SCHEDULER_NAME


def lws_values(config: StackConfig) -> dict[str, Any]:
    """Chart values. LWS's own gang scheduling stays off by default: it would make PodGroups
    without network topology and overwrite the pods' group annotation."""
    lws = config.lws
    values: dict[str, Any] = {"replicaCount": lws.replicas}
    if lws.gang_scheduling:
        values["gangSchedulingManagement"] = {"schedulerProvider": VOLCANO_SCHEDULER_NAME}
    repository = lws_image_repository(config)
    if repository:
        values["image"] = {"manager": {"repository": repository}}
    pull_secret = lws_pull_secret(config)
    if pull_secret:
        values["imagePullSecrets"] = [{"name": pull_secret}]
    return deep_merge(values, lws.values)


class LwsInstall(pulumi.ComponentResource):
    """Namespace `lws-system` (its CRD conversion webhook hard-codes it), the pull Secret of its
    image (if any) and the chart."""

    release: KubernetesResource

    def __init__(self, name: str, spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__("volcano-platform:lws:LwsInstall", name, None, opts)
        config = spec.config
        chart = lws_chart(config)
        self.release = installed_chart(
            name,
            LWS_RELEASE,
            LWS_NAMESPACE,
            chart,
            config.lws.protect,
            self,
            platform_pull_secret(spec, lws_pull_secret(config), LWS_NAMESPACE),
            config.lws.adopt,
            {"version": config.lws.version, "values": lws_values(config), "timeout": 600},
            chart_login(spec, chart),
        )
        self.register_outputs({"release": LWS_RELEASE})
