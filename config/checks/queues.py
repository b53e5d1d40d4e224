"""Volcano's queue admission rules, checked before anything is applied, and the quotas the
models need from their queues.

The admission webhook rejects a Queue that breaks them, which would stop `pulumi up` half-way;
here the same rules are reported against the stack file. Each model must also fit its queue's
capability (and every ancestor's).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from config.errors import Problem, Severity, join_path
from config.schema.quantity import format_amount, quantity_value
from config.spec.placement import replicas_key, replicas_name
from config.spec.platform import PlatformSpec, TenantSpec
from config.upstream.volcano import MAX_QUEUE_DEPTH


def check_queues(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for tenant in spec.tenants.values():
        problems += _own_limits(tenant)
        if tenant.depth > MAX_QUEUE_DEPTH:
            problems.append(
                Problem(
                    join_path(tenant.queue_path, "parent"),
                    f"queue `{tenant.queue_name}` is {tenant.depth} levels below `root`, at most "
                    f"{MAX_QUEUE_DEPTH} are allowed",
                    "flatten the hierarchy",
                )
            )
        if tenant.parent is not None:
            problems += _within_parent(spec, tenant)
        if tenant.children:
            problems += _children_sum(spec, tenant)
    problems += _cluster_inventory(spec)
    problems += _type_inventory(spec)
    problems += _failure_margin(spec)
    problems += _leaf_queues(spec)
    return problems


def _values(resources: dict[str, str]) -> dict[str, Decimal]:
    return {name: quantity_value(q) for name, q in resources.items()}


def _own_limits(tenant: TenantSpec) -> list[Problem]:
    queue = tenant.config.queue
    base = tenant.queue_path
    guarantee, deserved, capability = (_values(queue.guarantee), _values(queue.deserved), _values(queue.capability))
    problems: list[Problem] = []
    for resource, value in guarantee.items():
        path = join_path(base, "guarantee", resource)
        if resource not in deserved:
            problems.append(
                Problem(
                    path,
                    f"{resource} is guaranteed but has no deserved share",
                    f"set `{join_path(base, 'deserved', resource)}` to at least the guarantee",
                )
            )
        elif value > deserved[resource]:
            problems.append(
                Problem(
                    path,
                    f"guarantee {format_amount(value)} exceeds deserved {format_amount(deserved[resource])}",
                    "guarantee <= deserved <= capability",
                    got=queue.guarantee[resource],
                )
            )
    for resource, value in deserved.items():
        if resource in capability and value > capability[resource]:
            problems.append(
                Problem(
                    join_path(base, "deserved", resource),
                    f"deserved {format_amount(value)} exceeds capability {format_amount(capability[resource])}",
                    "guarantee <= deserved <= capability",
                    got=queue.deserved[resource],
                )
            )
    return problems


def _within_parent(spec: PlatformSpec, tenant: TenantSpec) -> list[Problem]:
    assert tenant.parent is not None
    parent = spec.tenants[tenant.parent]
    mine, theirs = _values(tenant.config.queue.capability), _values(parent.config.queue.capability)
    return [
        Problem(
            join_path(tenant.queue_path, "capability", resource),
            f"capability {format_amount(value)} exceeds the parent queue "
            f"`{parent.queue_name}`'s {format_amount(theirs[resource])}",
            "keep a child's capability within its parent's",
            got=tenant.config.queue.capability[resource],
        )
        for resource, value in mine.items()
        if resource in theirs and value > theirs[resource]
    ]


def _children_sum(spec: PlatformSpec, parent: TenantSpec) -> list[Problem]:
    problems: list[Problem] = []
    for field in ("guarantee", "deserved"):
        sums: dict[str, Decimal] = defaultdict(Decimal)
        for child in parent.children:
            for resource, value in _values(getattr(spec.tenants[child].config.queue, field)).items():
                sums[resource] += value
        own = _values(getattr(parent.config.queue, field))
        for resource, total in sums.items():
            path = join_path(parent.queue_path, field, resource)
            if resource not in own:
                problems.append(
                    Problem(
                        path,
                        f"child queues set {field} {resource} (total {format_amount(total)}) but the parent has none",
                        f"set the parent's {field} to at least the total",
                    )
                )
            elif total > own[resource]:
                problems.append(
                    Problem(
                        path,
                        f"child queues' {field} total {format_amount(total)} exceeds the "
                        f"parent's {format_amount(own[resource])}",
                        f"raise the parent's {field} or lower the children's",
                        got=getattr(parent.config.queue, field)[resource],
                    )
                )
    return problems


def _cluster_inventory(spec: PlatformSpec) -> list[Problem]:
    """Top-level guarantees cannot promise more GPUs than the topology has."""
    if spec.topology is None:
        return []
    gpu = spec.gpu_resource
    inventory = Decimal(spec.topology.total_gpus)
    problems: list[Problem] = []
    checks: tuple[tuple[str, Severity], ...] = (("guarantee", "error"), ("deserved", "warning"))
    words = spec.accelerator.words
    for field, severity in checks:
        shares = {
            t.name: quantity_value(getattr(t.config.queue, field)[gpu])
            for t in spec.tenants.values()
            if t.parent is None and gpu in getattr(t.config.queue, field)
        }
        total = sum(shares.values(), Decimal(0))
        if total > inventory:
            largest = max(shares, key=lambda name: shares[name])
            listed = ", ".join(f"{name} {format_amount(amount)}" for name, amount in shares.items())
            problems.append(
                Problem(
                    join_path(spec.tenants[largest].queue_path, field, gpu),
                    f"top-level queues' {field} of {gpu} adds up to {format_amount(total)} ({listed}), but the "
                    f"topology has {format_amount(inventory)} {words}",
                    f"lower the {field}s (the largest is `{largest}`'s) or describe the missing nodes",
                    severity=severity,
                )
            )
    problems += _one_tenant_takes_all(spec, inventory)
    return problems


def _type_inventory(spec: PlatformSpec) -> list[Problem]:
    """Quotas of one accelerator type cannot promise more than that type's pools have (at their
    largest): a guarantee beyond it is an error, a deserved share a warning."""
    if spec.topology is None or not spec.pools:
        return []
    gpu = spec.gpu_resource
    inventory: dict[str, Decimal] = defaultdict(Decimal)
    for name in spec.pools:
        inventory[spec.pool_types[name]] += spec.topology.domains[name].gpus
    problems: list[Problem] = []
    typed = [t for t in spec.tenants.values() if t.accelerator_type is not None]
    checks: tuple[tuple[str, Severity], ...] = (("guarantee", "error"), ("deserved", "warning"))
    for field, severity in checks:
        for kind, have in inventory.items():
            shares = {
                t.name: quantity_value(getattr(t.config.queue, field)[gpu])
                for t in typed
                if t.accelerator_type == kind and gpu in getattr(t.config.queue, field)
            }
            total = sum(shares.values(), Decimal(0))
            if total > have:
                largest = max(shares, key=lambda name: shares[name])
                problems.append(
                    Problem(
                        join_path(spec.tenants[largest].queue_path, field, gpu),
                        f"the {field}s of type `{kind}` add up to {format_amount(total)}, but its pools have "
                        f"{format_amount(have)} {spec.accelerator.words} at their largest",
                        f"lower the {field}s of `{kind}`, or let its pools grow",
                        severity=severity,
                    )
                )
    return problems


def _failure_margin(spec: PlatformSpec) -> list[Problem]:
    """Guarantees that no longer fit once the loss the stack plans for (`cluster.failureMargin`,
    a node unless it says otherwise) takes its accelerators: the capacity plugin keeps reserving
    every guarantee (v1.15.1 `capacity.go`: a queue's `realCapability` is the cluster beyond all
    guarantees plus its own), so with less left than they add up to, some tenant's promise is
    broken exactly when the hardware fails. Per accelerator type where the stack has pools of
    several."""
    margin = spec.config.cluster.failure_margin
    if spec.topology is None or margin == "none":
        return []
    severity: Severity = "warning" if margin is None else "error"
    loss = margin or "node"
    gpu = spec.gpu_resource
    topology = spec.topology
    leaves = [d for d in topology.at_tier(1) if d.gpus]
    scopes: list[tuple[str | None, set[str], list[TenantSpec]]] = [
        (None, set(spec.pools), [t for t in spec.tenants.values() if t.parent is None])
    ]
    kinds = sorted(set(spec.pool_types.values()))
    for each in kinds if len(kinds) > 1 else []:
        of_kind = {name for name, of in spec.pool_types.items() if of == each}
        scopes.append((each, of_kind, [t for t in spec.tenants.values() if t.accelerator_type == each]))
    problems: list[Problem] = []
    for kind, pools, tenants in scopes:
        shares = {
            t.name: quantity_value(t.config.queue.guarantee[gpu]) for t in tenants if gpu in t.config.queue.guarantee
        }
        domains = [d for d in leaves if not pools or d.pool in pools]
        if pools:
            have = Decimal(sum(topology.domains[name].gpus for name in pools))
            per_node = max(spec.pools[name].gpus_per_node for name in pools)
        else:
            have = Decimal(topology.total_gpus)
            per_node = max((g for d in domains for g, _ in d.capacity), default=0)
        if not shares or not have:
            continue
        if loss == "domain" and domains:
            largest = max(domains, key=lambda d: d.gpus)
            lost, what = Decimal(largest.gpus), f"its largest tier-1 domain (`{largest.name}`, {largest.gpus})"
        else:
            lost, what = Decimal(per_node), f"one node ({per_node})"
        total = sum(shares.values(), Decimal(0))
        if total <= have - lost:
            continue
        top = max(shares, key=lambda name: shares[name])
        scope = f"`{kind}` " if kind else ""
        problems.append(
            Problem(
                join_path(spec.tenants[top].queue_path, "guarantee", gpu),
                f"the {scope}guarantees add up to {format_amount(total)} of {format_amount(have)} "
                f"{spec.accelerator.words}; after losing {what} {format_amount(have - lost)} remain, and Volcano "
                "keeps reserving every guarantee: a tenant's guarantee breaks when the hardware fails",
                f"keep the guarantees within {format_amount(have - lost)} (the largest is `{top}`'s), or accept the "
                "risk with `cluster.failureMargin: none`",
                severity=severity,
            )
        )
    return problems


def _one_tenant_takes_all(spec: PlatformSpec, inventory: Decimal) -> list[Problem]:
    """A tenant guaranteed (nearly) every accelerator leaves the others only what it does not use."""
    gpu = spec.gpu_resource
    top = [t for t in spec.tenants.values() if t.parent is None]
    if len(top) < 2 or inventory == 0:
        return []
    problems: list[Problem] = []
    for tenant in top:
        guarantee = tenant.config.queue.guarantee.get(gpu)
        if guarantee is not None and quantity_value(guarantee) >= inventory * Decimal("0.9"):
            others = [t.name for t in top if t.name != tenant.name]
            problems.append(
                Problem(
                    join_path(tenant.queue_path, "guarantee", gpu),
                    f"`{tenant.name}` is guaranteed {guarantee} of the cluster's {format_amount(inventory)} "
                    f"{spec.accelerator.words}; {', '.join(others)} get only what it leaves idle and lose even that "
                    "when it reclaims",
                    "guarantee each tenant its minimum; let `deserved` and reclaim share the rest",
                    got=guarantee,
                    severity="warning",
                )
            )
    return problems


def _leaf_queues(spec: PlatformSpec) -> list[Problem]:
    """With hierarchical queues only leaves get allocations: models must use leaf tenants."""
    if not spec.hierarchy:
        return []
    return [
        Problem(
            join_path("models", model.name, "tenant"),
            f"tenant `{model.tenant}` has child queues; with hierarchical queues only leaf queues get resources",
            "run the model under one of its child tenants: " + ", ".join(spec.tenants[model.tenant].children),
            got=model.tenant,
        )
        for model in spec.models.values()
        if not spec.tenants[model.queue_tenant].leaf
    ]


def check_queue_capacity(spec: PlatformSpec) -> list[Problem]:
    """Each model must fit its queue's capability (and every ancestor's); warn when a queue's
    models together exceed it."""
    problems: list[Problem] = []
    totals: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for model in spec.models.values():
        caps = _effective_capability(spec, model.queue_tenant)
        # One replica: a gang, or a slice at its minimum (with prefill and decode apart).
        gang = model.slice_gang.min_requests() if model.disaggregated else model.gang.requests()
        total = model.peak_requests()
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
