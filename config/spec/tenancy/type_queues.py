"""Quotas per accelerator type (`queue.byType`): each a child queue `<queue>-<type>` of the tenant
that keeps it, held to that type's node groups by Volcano's `nodegroup` plugin, and the queue of
each model of such a tenant."""

from __future__ import annotations

from dataclasses import replace

from config.errors import Problem, join_path
from config.sections.stack import StackConfig
from config.sections.tenants import QueueConfig, TenantConfig
from config.spec.platform import TenantSpec
from config.spec.pools import Pool, pool_type
from config.upstream.volcano import NODE_GROUP_LABEL


def typed_queues(
    config: StackConfig, tenants: dict[str, TenantSpec], pools: dict[str, Pool], problems: list[Problem]
) -> dict[str, TenantSpec]:
    """The tenants with, for each quota per accelerator type, a child queue `<queue>-<type>` kept
    on that type's node groups; where any tenant has one, every queue that runs work gets the node
    groups it may use (all of them for a queue without types), as the `nodegroup` plugin admits a
    labelled node only to a queue whose affinity names its group."""
    if not any(t.config.queue.by_type for t in tenants.values()):
        return tenants
    groups: dict[str, list[str]] = {}
    for name, pool in pools.items():
        group = pool.config.selector.get(NODE_GROUP_LABEL)
        if group is None:
            problems.append(
                Problem(
                    join_path("pools", name, "selector"),
                    f"tenants keep quotas per accelerator type, and Volcano keeps a type's work on its nodes by their "
                    f"`{NODE_GROUP_LABEL}` label, which pool `{name}`'s selector does not name",
                    f"label the pool's nodes `{NODE_GROUP_LABEL}: {name}` where they are provisioned (the node group's "
                    f"labels, a Karpenter NodePool's template) and add it to `pools.{name}.selector`",
                )
            )
            continue
        groups.setdefault(pool_type(pool), []).append(group)
    every = tuple(sorted({g for found in groups.values() for g in found}))
    out: dict[str, TenantSpec] = {}
    for name, tenant in tenants.items():
        by_type = tenant.config.queue.by_type
        children = list(tenant.children)
        if by_type and children:
            problems.append(_types_on_a_parent(tenant, children))
            out[name] = tenant
            continue
        for kind in by_type:
            if kind not in groups and not any(pool_type(p) == kind for p in pools.values()):
                known = ", ".join(sorted({pool_type(p) for p in pools.values()})) or "none"
                problems.append(
                    Problem(
                        join_path(tenant.queue_path, "byType", kind),
                        f"no pool has the accelerator type `{kind}`",
                        f"use one of: {known} (`pools.<pool>.accelerator.type`, default the pool's name)",
                    )
                )
            children.append(f"{name}-{kind}")
        affinity = None if by_type or not tenant.namespaces else every
        out[name] = replace(tenant, children=tuple(children), node_groups=affinity)
        for kind, quota in by_type.items():
            child = f"{name}-{kind}"
            if child in tenants:
                problems.append(
                    Problem(
                        join_path(tenant.queue_path, "byType", kind),
                        f"its queue would be named `{tenant.queue_name}-{kind}`, the name of tenant `{child}`",
                        "rename the tenant or the type",
                    )
                )
                continue
            queue = QueueConfig(
                name=f"{tenant.queue_name}-{kind}",
                parent=name,
                weight=tenant.config.queue.weight,
                reclaimable=tenant.config.queue.reclaimable,
                priority=tenant.config.queue.priority,
                capability=quota.capability,
                deserved=quota.deserved,
                guarantee=quota.guarantee,
            )
            out[child] = TenantSpec(
                name=child,
                config=TenantConfig(namespaces=(), queue=queue),
                namespaces=(),
                queue_name=f"{tenant.queue_name}-{kind}",
                parent=name,
                parent_queue=tenant.queue_name,
                depth=tenant.depth + 1,
                queue_key=join_path(tenant.queue_path, "byType", kind),
                accelerator_type=kind,
                node_groups=tuple(sorted(groups.get(kind, ()))),
            )
    return out


def type_queue(
    model_name: str, model_pools: tuple[str, ...] | None, tenant: TenantSpec, pools: dict[str, Pool]
) -> tuple[str | None, list[Problem]]:
    """The tenant entry of a model's queue when its tenant keeps quotas per type: the child of its
    pools' one type. None: the tenant's own queue."""
    if not tenant.config.queue.by_type:
        return None, []
    path = join_path("models", model_name, "pools")
    kinds = sorted({pool_type(pools[p]) for p in model_pools or pools})
    if len(kinds) != 1:
        return None, [
            Problem(
                path,
                f"tenant `{tenant.name}` keeps quotas per accelerator type, and the model's pools are of "
                f"{len(kinds)} types ({', '.join(kinds)})",
                "name pools of one type under `pools`, so one of the tenant's quotas holds the model",
            )
        ]
    if kinds[0] not in tenant.config.queue.by_type:
        return None, [
            Problem(
                path,
                f"tenant `{tenant.name}` has no quota for the accelerator type `{kinds[0]}` of the model's pools",
                f"add `{join_path(tenant.queue_path, 'byType', kinds[0])}`, or run the model on a type it has",
            )
        ]
    return f"{tenant.name}-{kinds[0]}", []


def _types_on_a_parent(tenant: TenantSpec, children: list[str]) -> Problem:
    """A type's quota is a child queue of the tenant that keeps it: on a parent, one more child."""
    named = ", ".join(f"`{c}`" for c in children)
    return Problem(
        join_path(tenant.queue_path, "byType"),
        f"tenant `{tenant.name}` is the parent of {named}: each type would be one more child queue beside "
        "them, sharing the parent's quota with them instead of dividing it by type",
        f"give `queue.byType` to the children ({named}) that run the work, and keep `{tenant.name}`'s quota "
        "per resource",
        got=sorted(tenant.config.queue.by_type),
    )
