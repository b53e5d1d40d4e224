"""`TenantIsolation`: the NetworkPolicies of every tenant namespace (`networkPolicies`)."""

from __future__ import annotations

import pulumi

from components.isolation.network_policies import namespace_policies
from components.kubernetes.resource import NETWORK_POLICY, KubernetesResource
from config.spec.platform import PlatformSpec


class TenantIsolation(pulumi.ComponentResource):
    """One resource per policy, named `<component>/<namespace>/<policy>` (neither part holds a
    `/`), after the namespace it is in."""

    def __init__(
        self,
        name: str,
        spec: PlatformSpec,
        namespaces: dict[str, pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:isolation:TenantIsolation", name, None, opts)
        for manifest in namespace_policies(spec):
            metadata = manifest["metadata"]
            KubernetesResource(
                f"{name}/{metadata['namespace']}/{metadata['name']}",
                NETWORK_POLICY,
                manifest,
                pulumi.ResourceOptions(parent=self, depends_on=[namespaces[metadata["namespace"]]]),
            )
        self.register_outputs({})
