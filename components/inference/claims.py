"""`WeightClaims`: the PersistentVolumeClaims that hold model weights, where the stack creates them.

On a cloud the weights live on a shared file system behind a CSI driver (EFS, FSx for Lustre,
Filestore); a model names its claim and may ask the stack to create it in its namespace. One claim
per namespace and name, however many models read it; kept when it leaves the stack, because it
holds the weights.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.kubernetes.resource import PERSISTENT_VOLUME_CLAIM, KubernetesResource
from config.platform_labels import MANAGED_BY
from config.sections.model_source import ClaimTemplate
from config.spec.platform import PlatformSpec


def claim_manifest(namespace: str, name: str, template: ClaimTemplate) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": [template.access_mode],
        "resources": {"requests": {"storage": str(template.size)}},
    }
    if template.storage_class is not None:
        spec["storageClassName"] = template.storage_class
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": spec,
    }


class WeightClaims(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        spec: PlatformSpec,
        namespaces: dict[str, pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:inference:WeightClaims", name, None, opts)
        for (namespace, claim), template in spec.claims.items():
            KubernetesResource(
                f"{name}-{namespace}-{claim}",
                PERSISTENT_VOLUME_CLAIM,
                claim_manifest(namespace, claim, template),
                pulumi.ResourceOptions(parent=self, depends_on=[namespaces[namespace]], retain_on_delete=True),
            )
        self.register_outputs({"claims": len(spec.claims)})
