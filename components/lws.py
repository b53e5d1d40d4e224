"""`LwsInstall`: the LeaderWorkerSet controller."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes_objects import release_in_namespace
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
        self.release = release_in_namespace(
            name,
            LWS_RELEASE,
            LWS_NAMESPACE,
            config.protect,
            self,
            chart=config.chart,
            version=config.version,
            values=lws_values(config),
            timeout=600,
        )
        self.register_outputs({"release": self.release.name})
