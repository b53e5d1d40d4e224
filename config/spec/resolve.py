"""Resolve a structurally valid `StackConfig` into a `PlatformSpec`.

Resolution fills defaults that depend on other keys (namespaces, queue names, GPU resource,
service names, vLLM version) and follows references. A reference that cannot be followed is a
problem here, and the entry is left out of the spec so later checks need not guard against it.
"""

from __future__ import annotations

from dataclasses import replace

from config.errors import Problem, join_path
from config.sections.disaggregation import SERVING_ROLES
from config.sections.models import ModelConfig
from config.sections.priority import DEFAULT_PRIORITY_CLASSES
from config.sections.stack import StackConfig
from config.sections.tenants import QueueConfig, TenantConfig
from config.spec.gateway import resolve_gateway
from config.spec.images import sidecar_image, sidecar_pull_secret
from config.spec.model import ModelSpec, role_config
from config.spec.platform import PlatformSpec, TenantSpec, resolve_accelerator
from config.spec.pool_choice import model_pools, scheduling_constraints
from config.spec.pools import Pool, pool_type, pooled_topology, resolve_pools
from config.spec.topology import Topology, resolve_topology
from config.upstream.accelerators import VENDORS, vendor_of
from config.upstream.interconnects import INTERCONNECTS
from config.upstream.versions import version_tuple
from config.upstream.vllm_releases import CURRENT as VLLM_CURRENT_VERSION
from config.upstream.vllm_releases import image_vllm_version
from config.upstream.volcano import NODE_GROUP_LABEL


def resolve(
    config: StackConfig, stack: str, tenant_file_models: frozenset[str] = frozenset()
) -> tuple[PlatformSpec, list[Problem]]:
    """The spec; `tenant_file_models` (models written in tenant files) never decide a
    cluster-wide default."""
    problems: list[Problem] = []
    topology: Topology | None = None
    if config.topology is not None and (config.topology.domains or not config.pools):
        topology, found = resolve_topology(config.topology, config.cluster.gpus_per_node)
        problems += found
    pools, found = resolve_pools(config)
    problems += found
    if not any(p.severity == "error" for p in problems):
        topology = pooled_topology(config, pools, topology, problems)
    tenants = typed_queues(config, _resolve_tenants(config, problems), pools, problems)
    models = {
        name: model_spec
        for name, model in config.models.items()
        if (model_spec := _resolve_model(name, model, config, tenants, topology, pools, problems)) is not None
    }
    scheduler = config.volcano.scheduler
    hierarchy = (
        scheduler.hierarchy if scheduler.hierarchy is not None else any(t.parent is not None for t in tenants.values())
    )
    lws_install = (
        config.lws.install
        if config.lws.install is not None
        else any(m.uses_lws for name, m in config.models.items() if name not in tenant_file_models)
    )
    classes = dict(config.priority_classes if config.priority_classes is not None else DEFAULT_PRIORITY_CLASSES)
    spec = PlatformSpec(
        stack=stack,
        config=config,
        cluster_name=config.cluster.name or stack,
        topology=topology,
        pools=pools,
        priority_classes=classes,
        gateway=resolve_gateway(config, models, classes),
        tenants=tenants,
        models=models,
        tenant_file_models=tenant_file_models,
        hierarchy=hierarchy,
        lws_install=lws_install,
        accelerator=resolve_accelerator(
            config.cluster.gpu_resource,
            config.cluster.accelerator.vendor,
            config.cluster.accelerator.ray_resource,
            config.cluster.accelerator.word,
        ),
    )
    return spec, problems


def _resolve_tenants(config: StackConfig, problems: list[Problem]) -> dict[str, TenantSpec]:
    """Tenants in parent-before-child order, with depths; cycles and dangling parents reported."""
    configs = config.tenants
    depth: dict[str, int] = {}

    def depth_of(name: str, trail: tuple[str, ...]) -> int | None:
        if name in depth:
            return depth[name]
        parent = configs[name].queue.parent
        if parent is None:
            depth[name] = 1
            return 1
        if parent not in configs:
            problems.append(
                Problem(
                    join_path("tenants", name, "queue", "parent"),
                    f"parent tenant `{parent}` does not exist",
                    "name another tenant (its queue becomes the parent queue), or remove `parent`",
                    got=parent,
                )
            )
            return None
        if parent in trail:
            cycle = " -> ".join((*trail, parent))
            problems.append(
                Problem(
                    join_path("tenants", name, "queue", "parent"),
                    f"queue parents form a cycle ({cycle})",
                    "make the hierarchy a tree",
                )
            )
            return None
        parent_depth = depth_of(parent, (*trail, parent))
        if parent_depth is None:
            return None
        depth[name] = parent_depth + 1
        return depth[name]

    for name in configs:
        depth_of(name, (name,))
    ordered = sorted((n for n in configs if n in depth), key=lambda n: depth[n])
    children: dict[str, list[str]] = {n: [] for n in ordered}
    for name in ordered:
        parent = configs[name].queue.parent
        if parent is not None and parent in children:
            children[parent].append(name)
    out: dict[str, TenantSpec] = {}
    for name in ordered:
        tenant = configs[name]
        parent = tenant.queue.parent
        out[name] = TenantSpec(
            name=name,
            config=tenant,
            namespaces=tenant.namespace_names(name),
            queue_name=tenant.queue_name(name),
            parent=parent,
            parent_queue=configs[parent].queue_name(parent) if parent else None,
            depth=depth[name],
            children=tuple(children[name]),
        )
    return out


def _resolve_model(
    name: str,
    model: ModelConfig,
    config: StackConfig,
    tenants: dict[str, TenantSpec],
    topology: Topology | None,
    pools: dict[str, Pool],
    problems: list[Problem],
) -> ModelSpec | None:
    base = join_path("models", name)
    tenant = tenants.get(model.tenant)
    if tenant is None:
        if model.tenant not in config.tenants:  # a tenant with a broken parent is reported already
            known = ", ".join(config.tenants) or "none defined"
            problems.append(
                Problem(
                    join_path(base, "tenant"),
                    f"tenant `{model.tenant}` does not exist",
                    f"use one of the tenants under `tenants` ({known})",
                    got=model.tenant,
                )
            )
        return None
    if not tenant.namespaces:
        problems.append(
            Problem(
                join_path(base, "tenant"),
                f"tenant `{tenant.name}` has no namespaces, so it cannot run models",
                f"give `tenants.{tenant.name}.namespaces` a namespace, or move the model to a leaf tenant",
            )
        )
        return None
    namespace = model.namespace or tenant.namespaces[0]
    if namespace not in tenant.namespaces:
        problems.append(
            Problem(
                join_path(base, "namespace"),
                f"namespace `{namespace}` does not belong to tenant `{tenant.name}`",
                "use one of: " + ", ".join(tenant.namespaces),
                got=namespace,
            )
        )
        return None
    gpu_resource = model.resources.gpu_resource or config.cluster.gpu_resource
    accelerator = config.cluster.accelerator
    if gpu_resource == config.cluster.gpu_resource:
        vendor = VENDORS[accelerator.vendor] if accelerator.vendor else vendor_of(gpu_resource)
        ray_resource = accelerator.ray_resource or vendor.ray_resource
    else:
        vendor = vendor_of(gpu_resource)
        ray_resource = vendor.ray_resource
    highest_tier = _resolve_tier(base, model, topology, problems)
    requests = _pod_requests(model, gpu_resource)
    version = version_tuple(model.vllm_version) if model.vllm_version else image_vllm_version(model.image)
    allowed, found = model_pools(name, model, gpu_resource, pools, topology.tiers if topology else ())
    if found:
        problems += found
        return None
    node_selector, affinity, tolerations = scheduling_constraints(model, allowed, pools)
    owner, found = type_queue(name, allowed, tenant, pools)
    if found:
        problems += found
        return None
    spec = ModelSpec(
        name=name,
        config=model,
        tenant=tenant.name,
        namespace=namespace,
        queue=tenants[owner].queue_name if owner else tenant.queue_name,
        queue_owner=owner or "",
        gpu_resource=gpu_resource,
        vendor=vendor.name,
        ray_resource=ray_resource,
        service_name=model.service_name or (f"{name}-leader" if model.multi_node else name),
        vllm_version=version or VLLM_CURRENT_VERSION,
        vllm_version_known=version is not None,
        highest_tier=highest_tier,
        own_pod_group=model.multi_node and not config.lws.gang_scheduling,
        pod_requests=requests,
        pools=allowed,
        node_selector=node_selector,
        node_affinity_terms=affinity,
        tolerations=tolerations,
    )
    if model.roles is None:
        return spec
    views = []
    for role in SERVING_ROLES:
        role_cfg = role_config(model, role, getattr(model.roles, role))
        views.append(
            replace(
                spec,
                config=role_cfg,
                pod_requests=_pod_requests(role_cfg, gpu_resource),
                highest_tier=_resolve_tier(join_path(base, "roles", role), role_cfg, topology, problems),
                own_pod_group=True,
                serving_role=role,
                model_port=model.port,
                sidecar_image=sidecar_image(config, model) if role == "decode" else None,
                sidecar_pull_secret=sidecar_pull_secret(config, model) if role == "decode" else None,
            )
        )
    return replace(spec, own_pod_group=False, role_views=tuple(views))


def _pod_requests(model: ModelConfig, gpu_resource: str) -> dict[str, str]:
    """Requests (= limits) of one pod: CPU, memory, GPUs, devices and what their interconnects add."""
    requests: dict[str, str] = {"cpu": model.resources.cpu, "memory": model.resources.memory}
    if model.resources.gpus:
        requests[gpu_resource] = str(model.resources.gpus)
    for device, count in model.resources.devices.items():
        requests[device] = str(count)
    for device in model.resources.devices:
        for resource, quantity in INTERCONNECTS[device].requests.items() if device in INTERCONNECTS else ():
            requests.setdefault(resource, quantity)
    return requests


def _resolve_tier(base: str, model: ModelConfig, topology: Topology | None, problems: list[Problem]) -> int | None:
    constraint = model.topology
    if constraint is None:
        return None
    path = join_path(base, "topology")
    if constraint.highest_tier_name is not None:
        if topology is None:
            problems.append(
                Problem(
                    join_path(path, "highestTierName"),
                    "the stack has no `topology`, so there are no tier names",
                    "describe the network under `topology`, or remove the constraint",
                )
            )
            return None
        tier = topology.tier_of_label(constraint.highest_tier_name)
        if tier is None:
            problems.append(
                Problem(
                    join_path(path, "highestTierName"),
                    f"`{constraint.highest_tier_name}` is not a tier label",
                    "use one of: " + ", ".join(topology.tiers),
                    got=constraint.highest_tier_name,
                )
            )
        return tier
    if constraint.highest_tier is not None and topology is not None and constraint.highest_tier > topology.top_tier:
        problems.append(
            Problem(
                join_path(path, "highestTier"),
                f"tier {constraint.highest_tier} does not exist; the topology has {topology.top_tier} tier(s)",
                f"use a tier from 1 to {topology.top_tier}",
                got=constraint.highest_tier,
            )
        )
        return None
    return constraint.highest_tier


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
            named = ", ".join(f"`{c}`" for c in children)
            problems.append(
                Problem(
                    join_path(tenant.queue_path, "byType"),
                    f"tenant `{name}` is the parent of {named}: a type's quota is a child queue of the tenant "
                    "that keeps it, so here each type would be one more child beside them, sharing the parent's "
                    "quota with them instead of dividing it by type",
                    f"give `queue.byType` to the children ({named}) that run the work, and keep `{name}`'s "
                    "quota per resource",
                    got=sorted(by_type),
                )
            )
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
