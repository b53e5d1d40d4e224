"""Small helpers that register Kubernetes objects the same way in every component."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.labels import MANAGED_BY


def custom_resource(
    name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """A Volcano or LeaderWorkerSet object from its manifest (the pure builders produce those)."""
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


def release_in_namespace(
    prefix: str, release: str, namespace: str, protect: bool, parent: pulumi.Resource, **chart: Any
) -> k8s.helm.v3.Release:
    """A Helm release and the namespace it owns. `protect` guards both: deleting the namespace
    would take the release's objects with it."""
    options = pulumi.ResourceOptions(parent=parent, protect=protect)
    created = k8s.core.v1.Namespace(
        f"{prefix}-namespace", metadata={"name": namespace, "labels": dict(MANAGED_BY)}, opts=options
    )
    return k8s.helm.v3.Release(
        f"{prefix}-release",
        name=release,  # explicit: object names derive from it and are contracts
        namespace=namespace,
        max_history=10,
        opts=pulumi.ResourceOptions.merge(options, pulumi.ResourceOptions(depends_on=[created])),
        **chart,
    )
