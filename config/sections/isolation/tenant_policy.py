"""`tenantPolicy`: what a tenant file may use and set, decided in the platform's own files.

A tenant file (`include.tenants`) is reviewed by its tenant team; the program, not the review,
keeps it inside its tenant: anything past these grants is refused at the tenant file's key, and
every object it renders is held to them whatever key produced it. Tenants written in the stack
file or an `include.files` file are the platform team's and are bound only by their Pod Security
level (`podSecurity`), which their namespaces enforce."""

from typing import Annotated, Literal

from pydantic import Field

from config.schema.base import ConfigModel
from config.schema.names import DnsLabel, GatewayHostname, SecretName, TenantName
from config.sections.tenants import ResourceList

PodSecurityLevel = Literal["restricted", "baseline", "privileged"]


NfsExport = Annotated[str, Field(pattern=r"^[^:/\s]+:/\S*$", max_length=1024)]
"""`<server>:<path>`, e.g. `nfs.lab.example:/exports/models`."""


class TypeCeilings(ConfigModel):
    """Ceilings of a tenant file's quota on one accelerator type (`queue.byType.<type>`)."""

    max_capability: ResourceList | None = None
    """Ceiling of `byType.<type>.capability` per resource. Default: the type's pools at their
    largest (for the accelerator)."""
    max_deserved: ResourceList | None = None
    """Ceiling of `byType.<type>.deserved` per resource. Default: as `maxCapability`."""
    max_guarantee: ResourceList | None = None
    """Ceiling of `byType.<type>.guarantee`; a resource not named may not be guaranteed. Default:
    nothing."""


class TenantGrant(ConfigModel):
    """What a tenant file may use and set. A field left out takes `tenantPolicy.default`'s, then
    the default below."""

    priority_classes: tuple[str, ...] | None = None
    """Priority classes its models may use. Default: every class of the stack but the highest,
    which preempts everyone's work."""
    max_queue_priority: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    """Highest `queue.priority` its queue may have (Volcano serves queues of higher priority
    first and reclaims for them). Default: 0."""
    max_capability: ResourceList | None = None
    """Ceiling of `queue.capability` per resource named here. The accelerator not named: the
    cluster's accelerators (as many as the stack describes). A device its models request
    (`resources.devices`, e.g. `vpc.amazonaws.com/efa`) must be named here: its queue's capability
    then carries the device at this ceiling, so the device counts in its quota as the accelerator
    does."""
    max_deserved: ResourceList | None = None
    """Ceiling of `queue.deserved` per resource named here. The accelerator not named: the
    cluster's accelerators."""
    max_guarantee: ResourceList | None = None
    """Ceiling of `queue.guarantee` per resource named here; a resource not named may not be
    guaranteed. Default: nothing may be guaranteed (a guarantee is held back from every other
    queue)."""
    non_reclaimable: bool | None = None
    """Whether its queue may be `reclaimable: false` (its resources over its deserved share are
    then never given back). Default: false."""
    unpreemptable_models: bool | None = None
    """Whether its models may be `preemptable: false`. Default: false."""
    pod_security: PodSecurityLevel | None = None
    """The Pod Security level the tenant's namespaces enforce: the platform labels each of them
    `pod-security.kubernetes.io/enforce`, `audit` and `warn` with it, so the API server refuses
    pods beyond it (host paths, host namespaces, unconfined seccomp, capabilities beyond
    `baseline`'s such as RDMA's `IPC_LOCK` need `privileged`). Holds for every tenant, the
    platform's own too: a model that needs more than its tenant's level is refused with the
    grant that would admit it. Default: `baseline`."""
    secrets: tuple[SecretName, ...] | None = None
    """Entries of `secrets` its models may read (env values, hub tokens). Default: none."""
    registries: tuple[SecretName, ...] | None = None
    """Entries of `registries` its models may pull with. Default: none."""
    networks: tuple[str, ...] | None = None
    """Network attachments in other namespaces its models may attach, as `<namespace>/<name>`
    (its own namespaces' are always allowed). Default: none."""
    namespaces: tuple[DnsLabel, ...] | None = None
    """Namespaces it may create or adopt besides its own (`<tenant>` and `<tenant>-*`). Default:
    none."""
    hostnames: tuple[GatewayHostname, ...] | None = None
    """Gateway hostnames its file may claim besides its own (`<tenant>.<gateway.domain>` and
    names under it). Default: none."""
    consumers: tuple[TenantName, ...] | None = None
    """Other tenants its models may be served to through the gateway (`gateway.consumers`): on
    their hostnames, at their bands. Default: none (its own tenant only)."""
    by_type: dict[DnsLabel, TypeCeilings] | None = None
    """Ceilings per accelerator type of its `queue.byType` entries, e.g. `{h100: {maxCapability:
    {nvidia.com/gpu: 0}}}` keeps a batch team off the H100s. Default: each type's pools at their
    largest."""
    pools: tuple[DnsLabel, ...] | None = None
    """Node pools its models may run on (`models.*.pools`, or where their node selectors and
    tolerations lead). Default: every pool."""
    nfs: tuple[NfsExport, ...] | None = None
    """NFS exports its models may mount (`source.nfs`), as `<server>:<path>`; a path below a
    granted one is granted. Default: none."""
    parents: tuple[TenantName, ...] | None = None
    """Tenants written in other tenant files whose queue its queue may sit under (`queue.parent`):
    a child queue shares its parent's capability and deserved share. A tenant of the platform's
    own files (a grouping queue) is always allowed. Default: none."""


class TenantPolicyConfig(ConfigModel):
    """Grants for tenant files: `default` for every tenant file, `tenants.<t>` for one."""

    default: TenantGrant = TenantGrant()
    """What every tenant file may use and set."""
    tenants: dict[TenantName, TenantGrant] = {}
    """What one tenant's file may use and set, over `default` field by field."""
