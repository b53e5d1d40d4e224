"""The explicit Kubernetes provider every resource of the stack uses."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from config.sections.cluster import ClusterConfig


def kubernetes_provider(
    name: str, cluster: ClusterConfig, stack: str, opts: pulumi.ResourceOptions | None = None
) -> k8s.Provider:
    """An explicit provider ignores `kubernetes:*` stack config, so everything comes from
    `cluster`. `cluster_identifier` pins the provider's identity: pointing the stack at a new
    kubeconfig path or context for the same cluster then updates nothing. It defaults to the stack
    name, which never changes for a stack, rather than to the display name `cluster.name`; it also
    keeps a change of the provider's settings (`helmReleaseSettings`) an update, never a
    replacement (pulumi-kubernetes `provider/pkg/provider/provider.go`, DiffConfig)."""
    storage = cluster.helm_release_storage
    kubeconfig = pulumi.Output.secret(cluster.kubeconfig.get_secret_value()) if cluster.kubeconfig else None
    return k8s.Provider(
        name,
        kubeconfig=kubeconfig,
        context=cluster.context,
        cluster_identifier=cluster.identifier or stack,
        # Unset unless the stack chooses, so a stack that never did keeps its provider unchanged.
        helm_release_settings=k8s.HelmReleaseSettingsArgs(driver=storage) if storage else None,
        opts=opts,
    )
