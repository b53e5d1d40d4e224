"""`PlatformSpec`: the validated stack config with every default and reference resolved.

Components receive slices of this; nothing downstream re-derives namespaces, queue names, GPU
resource names or topology tiers, so every component agrees on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from config.accelerators import Accelerator
from config.errors import Problem
from config.models import ModelConfig
from config.priority import PriorityClassConfig
from config.stack import StackConfig
from config.tenants import TenantConfig
from config.topology_tree import Topology

if TYPE_CHECKING:
    from config.feasibility import Placement


@dataclass(frozen=True)
class TenantSpec:
    name: str
    config: TenantConfig
    namespaces: tuple[str, ...]
    queue_name: str
    parent: str | None
    """Parent tenant name (hierarchical queues)."""
    parent_queue: str | None
    depth: int
    """1 for a queue directly under `root`."""
    children: tuple[str, ...] = ()

    @property
    def leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True)
class ModelSpec:
    name: str
    config: ModelConfig
    tenant: str
    namespace: str
    queue: str
    gpu_resource: str
    ray_resource: str
    """How its pods advertise their devices to Ray (`GPU`, or a custom resource such as `NPU`)."""
    service_name: str
    vllm_version: tuple[int, ...]
    vllm_version_known: bool
    """False when neither `vllmVersion` nor the image tag names the version (the current
    release is assumed)."""
    highest_tier: int | None
    """Resolved highest tier (from number or label), None when unconstrained."""
    own_pod_group: bool
    """Multi-node model with a platform-made PodGroup (LWS gang scheduling off)."""
    pod_requests: dict[str, str]
    """Requests (= limits) of one pod, resource -> quantity text."""

    @property
    def multi_node(self) -> bool:
        return self.config.multi_node

    @property
    def pods_per_replica(self) -> int:
        return self.config.nodes_per_replica

    @property
    def gpus_per_pod(self) -> int:
        return self.config.resources.gpus

    @property
    def pod_group_name(self) -> str:
        return self.name

    @property
    def has_pod_group(self) -> bool:
        """Whether the platform's PodGroup exists. A model scaled to zero has none: an Inqueue
        PodGroup without pods keeps its `minResources` counted against the queue. An autoscaled
        model keeps its PodGroup (the autoscaler may start pods at any time); one that may scale
        to zero gets it without `minResources` (`pod_group_holds_quota`)."""
        return self.own_pod_group and (self.config.replicas > 0 or self.config.autoscaling is not None)

    @property
    def pod_group_holds_quota(self) -> bool:
        """Whether the PodGroup reserves one replica's resources while no pod runs."""
        autoscaling = self.config.autoscaling
        return autoscaling is None or autoscaling.min_replicas > 0


@dataclass(frozen=True)
class PlatformSpec:
    stack: str
    config: StackConfig
    cluster_name: str
    topology: Topology | None
    priority_classes: dict[str, PriorityClassConfig]
    tenants: dict[str, TenantSpec]
    """Parents before children."""
    models: dict[str, ModelSpec]
    hierarchy: bool
    """Queues form a hierarchy (capacity plugin with enableHierarchy)."""
    lws_install: bool
    accelerator: Accelerator
    placements: dict[str, Placement] = field(default_factory=dict)
    warnings: tuple[Problem, ...] = ()

    @property
    def gpu_resource(self) -> str:
        return self.config.cluster.gpu_resource

    @property
    def has_multi_node_models(self) -> bool:
        return any(model.multi_node for model in self.models.values())

    @property
    def queue_names(self) -> dict[str, str]:
        """Tenant name -> queue name."""
        return {name: tenant.queue_name for name, tenant in self.tenants.items()}
