"""`ModelSpec`: one served model with its namespace, queue, resources and vLLM version resolved."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from config.sections.models import ModelConfig
from config.spec.gang import Gang


@dataclass(frozen=True)
class ModelSpec:
    name: str
    config: ModelConfig
    tenant: str
    namespace: str
    queue: str
    gpu_resource: str
    vendor: str
    """The accelerator vendor of its devices (`config.upstream.accelerators.VENDORS`)."""
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
    queue_owner: str = ""
    """The tenant entry whose queue it runs in: its tenant, or the tenant's queue of its pools'
    accelerator type (`queue.byType`)."""
    pools: tuple[str, ...] | None = None
    """Node pools its pods may run on (stacks with `pools`); None: any node."""
    node_selector: dict[str, str] = field(default_factory=dict)
    """The pods' node selector: the model's own, narrowed to its pool."""
    node_affinity_terms: tuple[dict[str, str], ...] = ()
    """Required node-affinity terms (any one matches), one per pool when its pools share no selector."""
    tolerations: tuple[dict[str, object], ...] = ()
    """The pods' tolerations: the model's own and its pools' taints."""

    @property
    def multi_node(self) -> bool:
        return self.config.multi_node

    @cached_property
    def gang(self) -> Gang:
        """One replica as Volcano schedules it: its pods and their requests."""
        return Gang(self.config.nodes_per_replica, self.pod_requests)

    @property
    def queue_tenant(self) -> str:
        return self.queue_owner or self.tenant

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
