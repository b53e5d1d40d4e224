"""`tenantPolicy`: what a tenant file may use and set, decided in the platform's own files.

A tenant file (`include.tenants`) is reviewed by its tenant team; the program, not the review,
keeps it inside its tenant: anything past these grants is refused at the tenant file's key.
Tenants written in the stack file or an `include.files` file are the platform team's and are not
bound by them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from config.schema.base import ConfigModel
from config.schema.names import DnsLabel, DnsSubdomain, SecretName, TenantName
from config.sections.tenants import ResourceList

PodSecurityLevel = Literal["restricted", "baseline", "privileged"]


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
    """Ceiling of `queue.capability` (and each `byType` entry's) per resource named here.
    Default: none."""
    max_deserved: ResourceList | None = None
    """Ceiling of `queue.deserved` per resource named here. Default: none."""
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
    """The most permissive Pod Security level its namespaces may enforce (label
    `pod-security.kubernetes.io/enforce`) and its models may need: `baseline` refuses host paths
    and unconfined seccomp, capabilities beyond baseline's. Default: `baseline`."""
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
    hostnames: tuple[DnsSubdomain, ...] | None = None
    """Gateway hostnames its file may claim besides its own (`<tenant>.<gateway.domain>` and
    names under it). Default: none."""
    consumers: tuple[TenantName, ...] | None = None
    """Other tenants its models may be served to through the gateway (`gateway.consumers`): on
    their hostnames, at their bands. Default: none (its own tenant only)."""
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
