"""Quotas: each model must fit its queue's capability (and every ancestor's)."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from config.errors import Problem, join_path
from config.schema.quantity import format_amount, quantity_value
from config.spec.placement import replicas_key, replicas_name
from config.spec.platform import PlatformSpec


def check_queue_capacity(spec: PlatformSpec) -> list[Problem]:
    """Each model must fit its queue's capability (and every ancestor's); warn when a queue's
    models together exceed it."""
    problems: list[Problem] = []
    totals: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for model in spec.models.values():
        caps = _effective_capability(spec, model.queue_tenant)
        gang = model.gang.requests()
        total = {res: v * model.config.planned_replicas for res, v in gang.items()}
        path = join_path("models", model.name)
        for resource, (cap, owner) in caps.items():
            if resource not in gang:
                continue
            queue = spec.tenants[owner].queue_name
            if gang[resource] > cap:
                problems.append(
                    Problem(
                        path,
                        f"one replica needs {format_amount(gang[resource])} {resource} but queue "
                        f"`{queue}` is capped at {format_amount(cap)}; it can never start",
                        f"raise `{join_path(spec.tenants[owner].queue_path, 'capability', resource)}`, "
                        "or shrink the model",
                    )
                )
            elif total[resource] > cap:
                problems.append(
                    Problem(
                        replicas_key(model, path),
                        f"{model.config.planned_replicas} replica(s) need {format_amount(total[resource])} "
                        f"{resource} but queue `{queue}` is capped at {format_amount(cap)}",
                        f"lower `{replicas_name(model)}`, or raise the queue's capability",
                        got=model.config.planned_replicas,
                    )
                )
        for resource, value in total.items():
            totals[model.queue_tenant][resource] += value
    for tenant, usage in totals.items():
        for resource, (cap, owner) in _effective_capability(spec, tenant).items():
            if usage.get(resource, Decimal(0)) > cap:
                problems.append(
                    Problem(
                        join_path(spec.tenants[tenant].queue_path, "capability"),
                        f"the tenant's models together need {format_amount(usage[resource])} "
                        f"{resource}, more than queue `{spec.tenants[owner].queue_name}` allows "
                        f"({format_amount(cap)}); "
                        "some will stay Pending",
                        "raise the capability or run fewer replicas",
                        severity="warning",
                    )
                )
    return problems


def _effective_capability(spec: PlatformSpec, tenant_name: str) -> dict[str, tuple[Decimal, str]]:
    """Per resource: the tightest capability along the queue's ancestry, and the tenant it is on."""
    caps: dict[str, tuple[Decimal, str]] = {}
    name: str | None = tenant_name
    while name is not None and name in spec.tenants:
        tenant = spec.tenants[name]
        for resource, quantity in tenant.config.queue.capability.items():
            value = quantity_value(quantity)
            if resource not in caps or value < caps[resource][0]:
                caps[resource] = (value, name)
        name = tenant.parent
    return caps
