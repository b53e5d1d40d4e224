"""The cluster a stack manages: how to reach it and what its GPUs are called."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, SecretStr

from config.base import ConfigModel
from config.names import ResourceName


class ClusterConfig(ConfigModel):
    """`cluster`: identity and access of the Kubernetes cluster."""

    name: str | None = None
    """Display name of the cluster in summaries and outputs (free to change). Default: the stack
    name."""

    identifier: str | None = None
    """Identity of the cluster for the Kubernetes provider (`clusterIdentifier`). Every resource
    belongs to the provider, and a new identity replaces the provider and with it every resource,
    so it is set once and never changed; a changed kubeconfig, context or `name` replaces nothing.
    Default: the stack name."""

    kubeconfig: SecretStr | None = None
    """Path to a kubeconfig file, or its contents (set it as a Pulumi secret). Default: the
    ambient `KUBECONFIG` / `~/.kube/config`."""

    context: str | None = None
    """Kubeconfig context to use. Default: the kubeconfig's current context."""

    gpu_resource: ResourceName = "nvidia.com/gpu"
    """Extended resource name of the cluster's GPUs (`nvidia.com/gpu`, `amd.com/gpu`, a vendor
    name such as `mars-tech.com/gpu`). Models and the scheduler's binpacking default to it."""

    gpus_per_node: Annotated[int, Field(ge=1, le=64)] = 8
    """GPUs on a topology node unless a domain or node says otherwise."""

    kubernetes_version: Annotated[str, Field(pattern=r"^1\.\d+$")] = "1.33"
    """Kubernetes minor version (`1.33`) whose API schemas `offline check` validates against."""
