"""Tenant files stay inside their tenant: what they wrote is held to `tenantPolicy`.

Only what a tenant file wrote is checked (values a model inherits from `modelDefaults` are the
platform's), and every refusal is at the tenant file's own key, naming its file, with the grant
that would allow it. The platform's files are not bound: they are where the grants are written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from config.errors import Problem, join_path
from config.platform_labels import RESERVED_PREFIXES
from config.schema.quantity import format_amount, quantity_value
from config.sections.models import SecretRef
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import eviction_style
from config.spec.tenancy.grants import Grant, ceiling, grant_of, inventory
from config.upstream.kubernetes import PSA_LABEL_PREFIX


def check_tenant_files(
    spec: PlatformSpec, tenant_files: Mapping[str, str], written: Mapping[str, Mapping[str, Any]]
) -> list[Problem]:
    """`tenant_files`: tenant -> its file; `written`: file -> its sections as written."""
    problems: list[Problem] = []
    for tenant, file in tenant_files.items():
        if tenant not in spec.config.tenants:
            continue
        grant = grant_of(spec, tenant)
        raw = written.get(file) or {}
        found = list(_reserved_keys(raw, ()))
        found += _tenant(spec, grant, _mapping(_mapping(raw.get("tenants")).get(tenant)), tenant_files)
        for model, settings in _mapping(raw.get("models")).items():
            if model in spec.config.models:
                found += _model(spec, grant, model, _mapping(settings))
        problems += [Problem(p.path, p.message, p.fix, p.got, file=file) for p in found]
    problems += _shares_past_inventory(spec, tenant_files, written)
    return problems


SELECTOR_KEYS = frozenset({"nodeSelector"})
"""Mappings whose keys name node labels to match, not labels to set."""


def _reserved_keys(node: Any, path: tuple[object, ...]) -> Iterator[Problem]:
    """A reserved key anywhere a tenant file writes one (labels, annotations, or a key added
    later), except where it selects nodes: the queue a pod is judged in, its gang, whether it may
    be preempted and what its namespace admits are the platform's to set."""
    if isinstance(node, Mapping):
        selects = bool(path) and path[-1] in SELECTOR_KEYS
        # A namespace's Pod Security label is refused for every tenant, with the grant to set instead
        # (`config.checks.security`).
        namespace_labels = len(path) == 3 and path[0] == "tenants" and path[2] == "labels"
        for key, value in node.items():
            psa = namespace_labels and isinstance(key, str) and key.startswith(PSA_LABEL_PREFIX)
            if isinstance(key, str) and key.startswith(RESERVED_PREFIXES) and not selects and not psa:
                yield Problem(
                    join_path(*path, key),
                    f"`{key}` is read by the scheduler, LWS, the API server, the cloud or the platform; a tenant "
                    "file never sets it",
                    "remove it; the platform sets these from typed settings (`tenant`, `preemptable`, `tenantPolicy`)",
                    got=key,
                )
            else:
                yield from _reserved_keys(value, (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _reserved_keys(item, (*path, index))


def _shares_past_inventory(
    spec: PlatformSpec, tenant_files: Mapping[str, str], written: Mapping[str, Mapping[str, Any]]
) -> list[Problem]:
    """Deserved shares (and guarantees) the top-level queues promise past the stack's accelerators:
    refused at each tenant file that wrote one, since reclaim would chase shares no node holds."""
    have = inventory(spec)
    if have is None:
        return []
    gpu = spec.gpu_resource
    problems: list[Problem] = []
    for field in ("deserved", "guarantee"):
        shares = {
            t.name: quantity_value(getattr(t.config.queue, field)[gpu])
            for t in spec.tenants.values()
            if t.parent is None and t.accelerator_type is None and gpu in getattr(t.config.queue, field)
        }
        total = sum(shares.values(), Decimal(0))
        if total <= have:
            continue
        for tenant, file in tenant_files.items():
            queue = _mapping(_mapping(_mapping(_mapping(written.get(file)).get("tenants")).get(tenant)).get("queue"))
            if tenant in shares and gpu in _mapping(queue.get(field)):
                problems.append(
                    Problem(
                        join_path("tenants", tenant, "queue", field, gpu),
                        f"the top-level queues' {field}s of {gpu} add up to {format_amount(total)}, past the "
                        f"{format_amount(have)} {spec.accelerator.words} the stack describes",
                        "lower it, or have the platform team lower another tenant's or describe the missing nodes",
                        got=shares[tenant],
                        file=file,
                    )
                )
    return problems


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _tenant(
    spec: PlatformSpec, grant: Grant, raw: Mapping[str, Any], tenant_files: Mapping[str, str]
) -> Iterator[Problem]:
    tenant = grant.tenant
    config = spec.config.tenants[tenant]
    path = join_path("tenants", tenant)
    queue = _mapping(raw.get("queue"))
    parent = config.queue.parent
    if "parent" in queue and parent in tenant_files and parent not in grant.parents:
        yield Problem(
            join_path(path, "queue", "parent"),
            f"a tenant file may not put its queue under `{parent}`, another tenant file's tenant: the queue would "
            "share that tenant's capability and deserved share",
            f"remove it, or have the platform team grant it in {grant.key('parents')}",
            got=parent,
        )
    if "priority" in queue and config.queue.priority > grant.max_queue_priority:
        yield Problem(
            join_path(path, "queue", "priority"),
            f"a tenant file may give its queue a priority of at most {grant.max_queue_priority}",
            f"lower it, or have the platform team raise {grant.key('maxQueuePriority')}",
            got=config.queue.priority,
        )
    if queue.get("reclaimable") is False and not grant.non_reclaimable:
        yield Problem(
            join_path(path, "queue", "reclaimable"),
            "a tenant file may not make its queue non-reclaimable (what it holds over its deserved share would "
            "never go back to other tenants)",
            f"remove it, or have the platform team set {grant.key('nonReclaimable', 'true')}",
            got=False,
        )
    yield from _quotas(spec, grant, join_path(path, "queue"), queue, config.queue, None)
    for type_name, quota in config.queue.by_type.items():
        written = _mapping(_mapping(queue.get("byType")).get(type_name))
        yield from _quotas(spec, grant, join_path(path, "queue", "byType", type_name), written, quota, type_name)
    yield from _gateway(spec, grant, path, _mapping(raw.get("gateway")))
    if "namespaces" in raw:
        for index, namespace in enumerate(config.namespaces or ()):
            own = namespace == tenant or namespace.startswith(f"{tenant}-")
            if not own and namespace not in grant.namespaces:
                yield Problem(
                    join_path(path, "namespaces", index),
                    f"a tenant file may create or adopt only its own namespaces (`{tenant}` and `{tenant}-*`)",
                    f"name it `{tenant}-...`, or have the platform team grant it in {grant.key('namespaces')}",
                    got=namespace,
                )


def _gateway(spec: PlatformSpec, grant: Grant, path: str, written: Mapping[str, Any]) -> Iterator[Problem]:
    """A tenant file may order its requests only by a class it may run models at, and may claim
    only hostnames under its own (`<tenant>.<gateway.domain>`) or granted: another would take a
    name the platform or another team serves."""
    entry = spec.config.tenants[grant.tenant].gateway
    if "priorityClass" in written and entry.priority_class not in grant.priority_classes:
        allowed = ", ".join(f"`{c}`" for c in grant.priority_classes) or "none"
        yield Problem(
            join_path(path, "gateway", "priorityClass"),
            f"a tenant file's requests may use the priority classes {allowed}",
            f"use one of them, or have the platform team grant it in {grant.key('priorityClasses')}",
            got=entry.priority_class,
        )
    domain = spec.config.gateway.domain if spec.config.gateway is not None else None
    own = f"{grant.tenant}.{domain}" if domain else None
    for index, hostname in enumerate(entry.hostnames if "hostnames" in written else ()):
        mine = own is not None and (hostname == own or hostname.endswith(f".{own}"))
        if not mine and hostname not in grant.hostnames:
            yield Problem(
                join_path(path, "gateway", "hostnames", index),
                "a tenant file may claim only its own hostnames "
                f"({f'`{own}` and `*.{own}`' if own else 'none without `gateway.domain`'})",
                f"use one of them, or have the platform team grant it in {grant.key('hostnames')}",
                got=hostname,
            )


def _quotas(
    spec: PlatformSpec, grant: Grant, path: str, written: Mapping[str, Any], quota: Any, accelerator_type: str | None
) -> Iterator[Problem]:
    for kind in ("capability", "deserved", "guarantee"):
        if kind not in written:
            continue
        for resource, amount in getattr(quota, kind).items():
            limit = ceiling(spec, grant, kind, resource, accelerator_type)
            if limit is None and kind == "guarantee":
                field = f"byType.{accelerator_type}.maxGuarantee" if accelerator_type else "maxGuarantee"
                yield Problem(
                    join_path(path, kind, resource),
                    f"a tenant file may not guarantee `{resource}` (a guarantee is held back from every other queue)",
                    f"remove it, or have the platform team grant a ceiling in {grant.key(field)}",
                    got=amount,
                )
            elif limit is not None and quantity_value(amount) > limit.amount:
                where = f"tenant `{grant.tenant}`'s ceiling" if limit.written else "the stack's accelerators"
                yield Problem(
                    join_path(path, kind, resource),
                    f"a tenant file's {kind} of `{resource}` may be at most {limit.text} ({where})",
                    f"lower it, or have the platform team raise {limit.key}",
                    got=amount,
                )


def _model(spec: PlatformSpec, grant: Grant, name: str, raw: Mapping[str, Any]) -> Iterator[Problem]:
    config = spec.config.models[name]
    path = join_path("models", name)
    if "priorityClass" in raw and config.priority_class not in grant.priority_classes:
        by_value = sorted(
            grant.priority_classes, key=lambda c: -spec.priority_classes[c].value if c in spec.priority_classes else 0
        )
        allowed = ", ".join(f"`{c}`" for c in by_value) or "none"
        yield Problem(
            join_path(path, "priorityClass"),
            f"a tenant file's models may use the priority classes {allowed}",
            f"use one of them, or have the platform team grant it in {grant.key('priorityClasses')}",
            got=config.priority_class,
        )
    if raw.get("preemptable") is False and not grant.unpreemptable_models:
        yield Problem(
            join_path(path, "preemptable"),
            "a tenant file's models may not be unpreemptable",
            f"remove it, or have the platform team set {grant.key('unpreemptableModels', 'true')}",
            got=False,
        )
    consumers = config.gateway.consumers if "consumers" in _mapping(raw.get("gateway")) else None
    for index, consumer in enumerate(consumers or ()):
        if consumer != grant.tenant and consumer not in grant.consumers:
            yield Problem(
                join_path(path, "gateway", "consumers", index),
                f"a tenant file may serve its models only to its own tenant: on `{consumer}`'s hostnames the model "
                f"would answer that tenant's requests, at that tenant's band",
                f"remove it, or have the platform team grant it in {grant.key('consumers')}",
                got=consumer,
            )
    yield from _credentials(grant, path, raw, config)
    yield from _networks(spec, grant, path, raw, config)
    yield from _reach(spec, grant, path, raw, name)
    gang_ready = spec.lws_install and eviction_style(spec.config.volcano, spec.plans_multi_node_models) == "gang"
    if "nodesPerReplica" in raw and config.nodes_per_replica > 1 and not gang_ready:
        yield Problem(
            join_path(path, "nodesPerReplica"),
            "a multi-node model needs the LeaderWorkerSet controller and gang eviction, cluster-wide settings "
            "the platform's files leave off; a tenant file does not change them",
            "have the platform team set `lws.install: true` and `volcano.scheduler.eviction: gang` in the stack file",
            got=config.nodes_per_replica,
        )


def _credentials(grant: Grant, path: str, raw: Mapping[str, Any], config: Any) -> Iterator[Problem]:
    envs = [(path, _mapping(raw.get("env")), config.env)]
    for role in ("prefill", "decode"):
        written = _mapping(_mapping(_mapping(raw.get("roles")).get(role)).get("env"))
        settings = getattr(config.roles, role) if config.roles is not None else None
        if settings is not None:
            envs.append((join_path(path, "roles", role), written, settings.env))
    for where, written, env in envs:
        for variable in written:
            value = env.get(variable)
            if isinstance(value, SecretRef) and value.secret not in grant.secrets:
                yield _secret(grant, join_path(where, "env", variable, "secret"), value.secret)
    hub = config.source.hub
    written_token = "tokenSecret" in _mapping(_mapping(raw.get("source")).get("hub"))
    if written_token and hub and hub.token_secret and hub.token_secret not in grant.secrets:
        yield _secret(grant, join_path(path, "source", "hub", "tokenSecret"), hub.token_secret)
    if "imagePullSecrets" in raw:
        for index, registry in enumerate(config.image_pull_secrets):
            if registry not in grant.registries:
                yield Problem(
                    join_path(path, "imagePullSecrets", index),
                    f"the registry entry `{registry}` is not granted to tenant `{grant.tenant}`",
                    f"have the platform team grant it in {grant.key('registries')}",
                    got=registry,
                )


def _secret(grant: Grant, where: str, secret: str) -> Problem:
    return Problem(
        where,
        f"the secret `{secret}` is not granted to tenant `{grant.tenant}` (it would be copied into its namespace)",
        f"have the platform team grant it in {grant.key('secrets')}",
        got=secret,
    )


def _networks(spec: PlatformSpec, grant: Grant, path: str, raw: Mapping[str, Any], config: Any) -> Iterator[Problem]:
    if "networks" not in raw:
        return
    own = set(spec.tenants[config.tenant].namespaces) if config.tenant in spec.tenants else set()
    for index, network in enumerate(config.networks):
        namespace = network.namespace
        if namespace is not None and namespace not in own and f"{namespace}/{network.name}" not in grant.networks:
            yield Problem(
                join_path(path, "networks", index),
                f"the network attachment `{namespace}/{network.name}` is in a namespace that is not tenant "
                f"`{grant.tenant}`'s",
                f"use one in its own namespaces, or have the platform team grant it in {grant.key('networks')}",
                got=f"{namespace}/{network.name}",
            )


def _reach(spec: PlatformSpec, grant: Grant, path: str, raw: Mapping[str, Any], name: str) -> Iterator[Problem]:
    """What a tenant file's model reaches beyond its pods: NFS exports, nodes (its pools, every
    taint), devices outside its queue's quota."""
    model = spec.models[name]
    config = model.config
    nfs = config.source.nfs
    if nfs is not None and "nfs" in _mapping(raw.get("source")) and not grant.nfs_granted(nfs.server, nfs.path):
        yield Problem(
            join_path(path, "source", "nfs"),
            f"the NFS export `{nfs.server}:{nfs.path}` is not granted to tenant `{grant.tenant}` (its pods would "
            "mount whatever the server exports there)",
            f"have the platform team grant it in {grant.key('nfs')}",
            got=f"{nfs.server}:{nfs.path}",
        )
    for index, toleration in enumerate(config.tolerations if "tolerations" in raw else ()):
        if toleration.operator == "Exists" and not toleration.key:
            yield Problem(
                join_path(path, "tolerations", index),
                "a tenant file's models may not tolerate every taint (an `Exists` toleration without a key): "
                "control-plane, draining and reserved nodes included",
                "tolerate the GPU nodes' taints by key",
            )
    if grant.pools is not None and model.pools is not None:
        outside = [p for p in model.pools if p not in grant.pools]
        if outside:
            key = "pools" if "pools" in raw else next((k for k in ("nodeSelector", "tolerations") if k in raw), "pools")
            yield Problem(
                join_path(path, key),
                f"the model can run on the pool(s) {', '.join(f'`{p}`' for p in outside)}, which tenant "
                f"`{grant.tenant}` may not use (granted: {', '.join(f'`{p}`' for p in sorted(grant.pools)) or 'none'})",
                f"name only granted pools under `pools`, or have the platform team grant them in {grant.key('pools')}",
                got=list(model.pools),
            )
    for view in (model, *model.role_views):
        written = raw if view.serving_role is None else _mapping(_mapping(raw.get("roles")).get(view.serving_role))
        where = path if view.serving_role is None else join_path(path, "roles", view.serving_role)
        for device in _mapping(_mapping(written.get("resources")).get("devices")):
            limit = ceiling(spec, grant, "capability", device)
            if limit is None or not limit.written:
                yield Problem(
                    join_path(where, "resources", "devices", device),
                    f"`{device}` is in no quota of tenant `{grant.tenant}`: its pods could take every such device "
                    "of the nodes they land on",
                    f"have the platform team grant a ceiling in {grant.key('maxCapability')} (its queue then "
                    "counts it)",
                    got=device,
                )
