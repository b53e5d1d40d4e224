"""`LwsInstall`: the LeaderWorkerSet controller."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.labels import MANAGED_BY
from config.lws import LwsConfig
from config.merge import deep_merge
from config.upstream import LWS_NAMESPACE, LWS_RELEASE, VOLCANO_SCHEDULER_NAME


def lws_values(config: LwsConfig) -> dict[str, Any]:
    """Chart values. LWS's own gang scheduling stays off by default: it would make PodGroups
    without network topology and overwrite the pods' group annotation."""
    values: dict[str, Any] = {"replicaCount": config.replicas}
    if config.gang_scheduling:
        values["gangSchedulingManagement"] = {"schedulerProvider": VOLCANO_SCHEDULER_NAME}
    if config.image_repository:
        values["image"] = {"manager": {"repository": config.image_repository}}
    return deep_merge(values, config.values)


class LwsInstall(pulumi.ComponentResource):
    """Namespace `lws-system` (its CRD conversion webhook hard-codes it) and the chart."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, config: LwsConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("volcano-platform:lws:LwsInstall", name, None, opts)
        protect = pulumi.ResourceOptions(parent=self, protect=config.protect)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": LWS_NAMESPACE, "labels": dict(MANAGED_BY)},
            opts=protect,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=LWS_RELEASE,
            chart=config.chart,
            version=config.version,
            namespace=LWS_NAMESPACE,
            values=lws_values(config),
            timeout=600,
            max_history=10,
            opts=pulumi.ResourceOptions.merge(protect, pulumi.ResourceOptions(depends_on=[namespace])),
        )
        self.register_outputs({"release": self.release.name})
