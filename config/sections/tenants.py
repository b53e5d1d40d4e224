"""`tenants`: teams sharing the cluster, each with namespaces and a Volcano queue."""

from typing import Annotated, Literal

from pydantic import Field

from config.schema.base import ConfigModel
from config.schema.names import DnsLabel, DnsSubdomain, LabelKey, LabelValue, ResourceName
from config.schema.quantity import Quantity
from config.sections.gateway import TenantGatewayConfig
from config.sections.isolation.network_policies import TenantAllowFrom
from config.upstream.volcano import QUEUE_WEIGHT_MAX

ResourceList = dict[ResourceName, Quantity]


class TypeQuota(ConfigModel):
    """A tenant's quota on one accelerator type (`pools.<p>.accelerator.type`)."""

    capability: ResourceList = {}
    """Hard upper limit on that type's pools, e.g. `{nvidia.com/gpu: 32}`."""
    deserved: ResourceList = {}
    """Fair share on that type's pools."""
    guarantee: ResourceList = {}
    """Reserved on that type's pools; needs `deserved` for each."""


class QueueConfig(ConfigModel):
    """The tenant's Volcano Queue (`scheduling.volcano.sh/v1beta1`)."""

    name: DnsSubdomain | None = None
    """Queue name. Default: the tenant name."""
    parent: str | None = None
    """Parent tenant for hierarchical queues (needs the capacity plugin with hierarchy)."""
    weight: Annotated[int, Field(ge=1, le=QUEUE_WEIGHT_MAX)] = 1
    """Share of the cluster relative to sibling queues."""
    capability: ResourceList = {}
    """Hard upper limit per resource, e.g. `{nvidia.com/gpu: 64}`."""
    deserved: ResourceList = {}
    """Fair share the queue can reclaim when others borrowed it (capacity plugin)."""
    guarantee: ResourceList = {}
    """Resources reserved for the queue even when idle; needs `deserved` for each."""
    reclaimable: bool = True
    """Whether other queues may reclaim what this queue borrowed beyond its deserved share."""
    priority: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    """Queue priority: higher-priority queues are served first."""
    dequeue_strategy: Literal["fifo", "traverse"] = "traverse"
    """How jobs leave the queue: strictly in order, or skipping jobs that cannot start yet."""
    by_type: dict[DnsLabel, TypeQuota] = {}
    """Quotas per accelerator type (stacks with `pools`), e.g. `{h100: {deserved: {nvidia.com/gpu:
    32}}, l40s: {capability: {nvidia.com/gpu: 16}}}`. Each becomes a child queue
    `<queue>-<type>` whose pods Volcano's `nodegroup` plugin keeps on that type's pools (the
    queue's node-group affinity), so a grant of one type cannot be spent on another; the
    tenant's models run in the child queue of their pools' type. The tenant's own `capability`,
    `deserved` and `guarantee` then bound the sum over its types."""


class TenantConfig(ConfigModel):
    """One tenant; the key is its name (a DNS label)."""

    namespaces: tuple[DnsLabel, ...] | None = None
    """Namespaces the tenant's workloads run in. Default: one named after the tenant. An empty
    list makes the tenant a pure grouping queue (a parent of other tenants). The cluster's, the
    platform's and (with observability on) the monitoring namespaces are refused."""
    queue: QueueConfig = QueueConfig()
    """The tenant's Volcano queue."""
    labels: dict[LabelKey, LabelValue] = {}
    """Extra labels on the tenant's namespaces."""
    adopt: tuple[Literal["namespaces", "queue"], ...] = ()
    """Objects that already exist (made by hand, e.g. with kubectl) and that the stack takes over
    instead of creating: `namespaces`, `queue`. `pulumi up` imports them, then updates in place
    the fields that differ from what the stack sets (`preflight` lists them); nothing is
    recreated. `namespaces` is refused for a tenant without namespaces."""
    allow_from: TenantAllowFrom = TenantAllowFrom()
    """Who else may connect to the tenant's pods (`networkPolicies`): by default only its own
    namespaces, the gateway (to serving ports) and monitoring (to metrics ports)."""
    gateway: TenantGatewayConfig = TenantGatewayConfig()
    """How the tenant reaches the models it consumes through the inference gateway."""
    retain_namespaces: bool = True
    """Keep the namespaces on the cluster when the tenant (or one of its namespaces) is removed
    from the stack: they hold workloads, volumes and secrets the stack does not manage. `false`
    deletes them, with everything in them."""

    def namespace_names(self, tenant: str) -> tuple[str, ...]:
        return (tenant,) if self.namespaces is None else self.namespaces

    def queue_name(self, tenant: str) -> str:
        return self.queue.name or tenant


class DefaultQueuePatch(ConfigModel):
    """Changes to the scheduler-owned `default` queue, applied as a server-side patch (the queue
    cannot be created or deleted). Its open/closed state is status, not spec (`vcctl queue operate`
    closes it); a GPU capability of 0 keeps GPU pods out of it just as well."""

    weight: Annotated[int, Field(ge=1, le=QUEUE_WEIGHT_MAX)] | None = None
    """Weight of the default queue."""
    capability: ResourceList | None = None
    """Cap for pods that name no queue; `{<gpu>: 0}` keeps them off the GPUs."""
    reclaimable: bool | None = None
    """Let tenant queues reclaim what the default queue borrowed."""
