"""`PlatformSpec`: the validated stack config with every default and reference resolved.

Components receive slices of this; nothing downstream re-derives namespaces, queue names, GPU
resource names or topology tiers, so every component agrees on them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from config.errors import Problem
from config.sections.model_source import ClaimTemplate
from config.sections.priority import PriorityClassConfig
from config.sections.stack import StackConfig
from config.sections.tenants import TenantConfig
from config.spec.gateway import GatewaySpec
from config.spec.model import ModelSpec
from config.spec.placement import Placement, Status, domain_status
from config.spec.pools import Pool, pool_type
from config.spec.topology import Topology
from config.upstream.accelerators import VENDORS, Vendor, plural, vendor_of


@dataclass(frozen=True)
class Accelerator:
    """The cluster's accelerator as the stack resolves it."""

    vendor: Vendor
    resource: str
    ray_resource: str
    word: str

    @property
    def words(self) -> str:
        return plural(self.word)


def resolve_accelerator(resource: str, vendor: str | None, ray_resource: str | None, word: str | None) -> Accelerator:
    chosen = VENDORS[vendor] if vendor else vendor_of(resource)
    return Accelerator(chosen, resource, ray_resource or chosen.ray_resource, word or chosen.word)


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
    queue_key: str = ""
    """Key path of the queue's settings: `tenants.<t>.queue`, or `tenants.<t>.queue.byType.<type>`
    for a queue of one accelerator type."""
    accelerator_type: str | None = None
    """The accelerator type of a tenant's queue per type (`queue.byType`)."""
    node_groups: tuple[str, ...] | None = None
    """The node groups its tasks may use (the queue's node-group affinity), where the stack keeps
    quotas per type; None: no affinity."""

    @property
    def leaf(self) -> bool:
        return not self.children

    @property
    def queue_path(self) -> str:
        return self.queue_key or f"tenants.{self.name}.queue"


@dataclass(frozen=True)
class PlatformSpec:
    stack: str
    config: StackConfig
    cluster_name: str
    topology: Topology | None
    pools: dict[str, Pool]
    """Node pools (`pools`); empty on a stack whose GPU nodes are one pool."""
    priority_classes: dict[str, PriorityClassConfig]
    tenants: dict[str, TenantSpec]
    """Parents before children."""
    models: dict[str, ModelSpec]
    hierarchy: bool
    """Queues form a hierarchy (capacity plugin with enableHierarchy)."""
    lws_install: bool
    accelerator: Accelerator
    gateway: GatewaySpec | None = None
    """The inference gateway, when a model is behind it."""
    placements: dict[str, Placement] = field(default_factory=dict)
    warnings: tuple[Problem, ...] = ()
    tenant_file_models: frozenset[str] = frozenset()
    """Models written in tenant files (`include.tenants`): they never decide a cluster-wide setting."""
    tenant_files: Mapping[str, str] = field(default_factory=dict)
    """Tenant -> the tenant file (`include.tenants`) it is written in; the platform's tenants are
    absent. What a tenant file produces is held to `tenantPolicy` on the rendered objects
    (`config.checks.tenancy.rendered`)."""
    tenant_file_text: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Tenant file -> its sections as written, so a refusal names the key that produced a value."""

    def file_of_model(self, model: str) -> str | None:
        """The tenant file a model is written in, or None for the platform's models."""
        if model not in self.tenant_file_models or model not in self.models:
            return None
        return self.tenant_files.get(self.models[model].tenant)

    @property
    def gpu_resource(self) -> str:
        return self.config.cluster.gpu_resource

    @property
    def plans_multi_node_models(self) -> bool:
        """Whether the platform's own files (not tenant files) have multi-node models: this picks
        the cluster-wide defaults (gang eviction, the LWS install), so no tenant file flips them."""
        return any(m.config.uses_lws for name, m in self.models.items() if name not in self.tenant_file_models)

    @cached_property
    def domain_status(self) -> dict[str, Status]:
        """The placement verdict of every topology domain, the one the summary, `summary.json`, the
        picture and the checks all show (`config.spec.placement.domain_status`)."""
        return domain_status(self.placements.values(), self.topology) if self.topology is not None else {}

    @property
    def node_groups(self) -> bool:
        """Queues keep their tasks on node groups (quotas per accelerator type): the `nodegroup`
        plugin runs."""
        return any(t.node_groups is not None for t in self.tenants.values())

    @cached_property
    def claims(self) -> dict[tuple[str, str], ClaimTemplate]:
        """(Namespace, claim) -> how to create it: the weight claims the stack creates, the first
        model's description where several models share one (`config.checks.volumes` refuses two
        that differ)."""
        out: dict[tuple[str, str], ClaimTemplate] = {}
        for model in self.models.values():
            pvc = model.config.source.pvc
            if pvc is not None and pvc.create is not None:
                out.setdefault((model.namespace, pvc.claim_name), pvc.create)
        return out

    @cached_property
    def pool_types(self) -> dict[str, str]:
        """Pool -> the accelerator type quotas per type name it by."""
        return {name: pool_type(pool) for name, pool in self.pools.items()}

    @property
    def queue_names(self) -> dict[str, str]:
        """Tenant name -> queue name."""
        return {name: tenant.queue_name for name, tenant in self.tenants.items()}
