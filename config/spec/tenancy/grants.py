"""What each tenant is granted (`tenantPolicy`), every field settled, and the ceilings that hold
when the platform's files name none.

A tenant file is held to its grant twice: key by key where the key gives the clearer message
(`config.checks.tenancy.tenant_files`), and on the rendered objects, whatever key produced them
(`config.checks.tenancy.rendered`). The components read the grant too: a tenant's namespaces
enforce its Pod Security level, and its queue's capability carries the ceiling of every device
its tenant file's models request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from config.schema.quantity import format_amount, quantity_value
from config.sections.isolation.tenant_policy import TenantGrant, TypeCeilings
from config.spec.platform import PlatformSpec

CEILING_FIELDS = ("capability", "deserved", "guarantee")


@dataclass(frozen=True)
class Grant:
    """One tenant's grant, every field settled."""

    tenant: str
    priority_classes: tuple[str, ...]
    max_queue_priority: int
    ceilings: Mapping[str, Mapping[str, str] | None]
    """`capability`, `deserved`, `guarantee` -> ceiling per resource as the platform wrote it (None:
    none written, so the cluster's inventory bounds the accelerator; see `ceiling`)."""
    type_ceilings: Mapping[str, TypeCeilings]
    """Accelerator type -> its written ceilings (`byType`)."""
    non_reclaimable: bool
    unpreemptable_models: bool
    pod_security: str
    secrets: frozenset[str]
    registries: frozenset[str]
    networks: frozenset[str]
    namespaces: frozenset[str]
    hostnames: frozenset[str]
    consumers: frozenset[str]
    parents: frozenset[str]
    pools: frozenset[str] | None
    """Pools its models may run on; None: every pool."""
    nfs: tuple[str, ...]
    """NFS exports its models may mount, `<server>:<path>`."""

    def key(self, field: str, value: str | None = None) -> str:
        """The key that would grant it (with the value to set), for the fix."""
        setting = f"{field}: {value}" if value is not None else field
        return f"`tenantPolicy.tenants.{self.tenant}.{setting}` in the stack file"

    def nfs_granted(self, server: str, path: str) -> bool:
        """An export is granted when it is, or lies below, a granted one."""
        for export in self.nfs:
            granted_server, _, granted_path = export.partition(":")
            root = granted_path.rstrip("/")
            below = path.rstrip("/") == root or path.startswith(f"{root}/")
            if granted_server == server and below:
                return True
        return False


def grant_of(spec: PlatformSpec, tenant: str) -> Grant:
    policy = spec.config.tenant_policy
    own = policy.tenants.get(tenant, TenantGrant())

    def pick(field: str, default: Any) -> Any:
        for grant in (own, policy.default):
            value = getattr(grant, field)
            if value is not None:
                return value
        return default

    by_value = sorted(spec.priority_classes.items(), key=lambda item: item[1].value)
    pools = pick("pools", None)
    return Grant(
        tenant=tenant,
        priority_classes=tuple(pick("priority_classes", tuple(name for name, _ in by_value[:-1]))),
        max_queue_priority=pick("max_queue_priority", 0),
        ceilings={
            "capability": pick("max_capability", None),
            "deserved": pick("max_deserved", None),
            "guarantee": pick("max_guarantee", {}),
        },
        type_ceilings=pick("by_type", {}),
        non_reclaimable=pick("non_reclaimable", False),
        unpreemptable_models=pick("unpreemptable_models", False),
        pod_security=pick("pod_security", "baseline"),
        secrets=frozenset(pick("secrets", ())),
        registries=frozenset(pick("registries", ())),
        networks=frozenset(pick("networks", ())),
        namespaces=frozenset(pick("namespaces", ())),
        hostnames=frozenset(pick("hostnames", ())),
        consumers=frozenset(pick("consumers", ())),
        parents=frozenset(pick("parents", ())),
        pools=frozenset(pools) if pools is not None else None,
        nfs=tuple(pick("nfs", ())),
    )


def inventory(spec: PlatformSpec, accelerator_type: str | None = None) -> Decimal | None:
    """The accelerators the stack describes: all of them, or those of one type's pools at their
    largest. None where the stack describes no nodes."""
    if spec.topology is None:
        return None
    if accelerator_type is None:
        return Decimal(spec.topology.total_gpus)
    pools = [name for name, kind in spec.pool_types.items() if kind == accelerator_type]
    return sum((Decimal(spec.topology.domains[name].gpus) for name in pools), Decimal(0)) if pools else None


@dataclass(frozen=True)
class Ceiling:
    amount: Decimal
    text: str
    key: str
    """The grant key that sets it (for the fix), or where the default comes from."""
    written: bool
    """Whether the platform's files wrote it (else the cluster's inventory bounds it)."""


def ceiling(
    spec: PlatformSpec, grant: Grant, field: str, resource: str, accelerator_type: str | None = None
) -> Ceiling | None:
    """The most a tenant file may set `field` (`capability`, `deserved`, `guarantee`) of `resource`
    to, on its queue or (`accelerator_type`) one of its `byType` entries: the platform's written
    ceiling, else, for the accelerator, the inventory the stack describes (nothing may be promised
    past it). None: no ceiling (a guarantee of an unnamed resource is refused by the caller)."""
    written: Mapping[str, str] | None
    if accelerator_type is not None:
        type_grant = grant.type_ceilings.get(accelerator_type)
        written = getattr(type_grant, f"max_{field}") if type_grant is not None else None
        key = grant.key(f"byType.{accelerator_type}.max{field.capitalize()}")
    else:
        written = grant.ceilings[field]
        key = grant.key(f"max{field.capitalize()}")
    if written is not None and resource in written:
        return Ceiling(quantity_value(written[resource]), str(written[resource]), key, True)
    if resource == spec.gpu_resource and field != "guarantee":
        have = inventory(spec, accelerator_type)
        if have is not None:
            return Ceiling(have, format_amount(have), key, False)
    return None


def device_ceilings(spec: PlatformSpec, queue_tenant: str) -> dict[str, str]:
    """Resource -> the capability the queue of a tenant entry (a tenant, or its queue of one
    accelerator type) gets for each device beyond the accelerator that tenant files' models in it
    request and the queue does not bound itself: their tenant's `maxCapability`. So a device
    counts in the queue's quota as the accelerator does. A device without a ceiling is refused
    before anything renders (`config.checks.tenancy.tenant_files`)."""
    if queue_tenant not in spec.tenants:
        return {}
    written = spec.tenants[queue_tenant].config.queue.capability
    out: dict[str, str] = {}
    for model in spec.models.values():
        if model.queue_tenant != queue_tenant or spec.file_of_model(model.name) is None:
            continue
        grant = grant_of(spec, model.tenant)
        for view in (model, *model.role_views):
            for device in view.devices:
                limit = ceiling(spec, grant, "capability", device)
                if device not in written and limit is not None and limit.written:
                    out[device] = limit.text
    return out
