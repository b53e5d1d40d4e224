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
from config.sections.pools import PoolNetwork
from config.sections.priority import DEFAULT_PRIORITY_CLASSES
from config.sections.stack import StackConfig
from config.spec.gateway import resolve_gateway
from config.spec.images import network_daemon_image, sidecar_image, sidecar_pull_secret
from config.spec.model import ModelSpec, pod_devices, role_config
from config.spec.platform import PlatformSpec, TenantSpec, resolve_accelerator
from config.spec.pool_choice import model_pools, scheduling_constraints
from config.spec.pools import Pool, pooled_topology, resolve_pools
from config.spec.tenancy.type_queues import type_queue, typed_queues
from config.spec.topology import Topology, resolve_topology
from config.upstream.accelerators import VENDORS, vendor_of
from config.upstream.interconnects import INTERCONNECTS
from config.upstream.versions import version_tuple
from config.upstream.vllm_releases import CURRENT as VLLM_CURRENT_VERSION
from config.upstream.vllm_releases import image_vllm_version
from config.upstream.volcano import HOSTNAME_LABEL


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
    version = version_tuple(model.vllm_version) if model.vllm_version else image_vllm_version(model.image)
    allowed, found = model_pools(name, model, gpu_resource, pools, topology.tiers if topology else ())
    if found:
        problems += found
        return None
    network = _network(model, allowed, pools)
    requests = _pod_requests(model, gpu_resource, network)
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
        network=network,
        network_daemon_image=network_daemon_image(config, network),
        spread=_resolve_spread(base, model, topology, problems),
    )
    if model.roles is None:
        return spec
    views = []
    for role in SERVING_ROLES:
        role_cfg = role_config(model, role, getattr(model.roles, role))
        role_network = _network(role_cfg, allowed, pools)
        views.append(
            replace(
                spec,
                config=role_cfg,
                network=role_network,
                network_daemon_image=network_daemon_image(config, role_network),
                pod_requests=_pod_requests(role_cfg, gpu_resource, role_network),
                highest_tier=_resolve_tier(join_path(base, "roles", role), role_cfg, topology, problems),
                own_pod_group=True,
                serving_role=role,
                model_port=model.port,
                sidecar_image=sidecar_image(config, model) if role == "decode" else None,
                sidecar_pull_secret=sidecar_pull_secret(config, model) if role == "decode" else None,
            )
        )
    return replace(spec, own_pod_group=False, role_views=tuple(views))


def _network(model: ModelConfig, allowed: tuple[str, ...] | None, pools: dict[str, Pool]) -> PoolNetwork | None:
    """The network profile a model's pods carry: its pools' one, for a model whose replicas span
    nodes and whose pools all have the same (`check` refuses pools that differ)."""
    if not model.multi_node or not allowed:
        return None
    networks = {pools[name].config.network for name in allowed if name in pools}
    return networks.pop() if len(networks) == 1 else None


def _pod_requests(model: ModelConfig, gpu_resource: str, network: PoolNetwork | None) -> dict[str, str]:
    """Requests (= limits) of one pod: CPU, memory, GPUs, devices (the model's, or its pool's
    network profile's) and what their interconnects add."""
    requests: dict[str, str] = {"cpu": model.resources.cpu, "memory": model.resources.memory}
    if model.resources.gpus:
        requests[gpu_resource] = str(model.resources.gpus)
    devices = pod_devices(model, network)
    for device, count in devices.items():
        requests[device] = str(count)
    for device in devices:
        for resource, quantity in INTERCONNECTS[device].requests.items() if device in INTERCONNECTS else ():
            requests.setdefault(resource, quantity)
    return requests


def _resolve_spread(
    base: str, model: ModelConfig, topology: Topology | None, problems: list[Problem]
) -> tuple[str, bool] | None:
    """(the label whose values are the domains, required) of the model's replicas' spread."""
    spread = model.spread
    if spread is None:
        return None
    path = join_path(base, "spread", "across")
    if spread.across == "none":
        return None
    if model.disaggregated:
        problems.append(
            Problem(
                join_path(base, "spread"),
                "a model with `roles` places each slice as one gang inside its `topology`",
                "remove `spread`; slices are spread by their network domain",
            )
        )
        return None
    if spread.across == "node":
        return HOSTNAME_LABEL, spread.required
    tier = int(spread.across)
    if topology is None or tier > topology.top_tier:
        have = f"the topology has {topology.top_tier} tier(s)" if topology else "the stack has no `topology`"
        problems.append(
            Problem(path, f"tier {tier} does not exist; {have}", "spread across `node` or an existing tier")
        )
        return None
    return topology.tiers[tier - 1], spread.required


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
