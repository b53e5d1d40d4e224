"""Tenant files stay inside their tenant: what they wrote is held to `tenantPolicy`.

Only what a tenant file wrote is checked (values a model inherits from `modelDefaults` are the
platform's), and every refusal is at the tenant file's own key, naming its file, with the grant
that would allow it. The platform's files are not bound: they are where the grants are written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from config.checks.security import BASELINE_CAPABILITIES, PSA_ENFORCE
from config.errors import Problem, join_path
from config.schema.quantity import quantity_value
from config.sections.models import SecretRef
from config.sections.tenant_policy import TenantGrant
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import eviction_style

LEVELS = ("restricted", "baseline", "privileged")
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
"""What the restricted Pod Security level lets a container add."""


@dataclass(frozen=True)
class Grant:
    """One tenant's grant, every field settled."""

    tenant: str
    priority_classes: tuple[str, ...]
    max_queue_priority: int
    ceilings: Mapping[str, Mapping[str, str] | None]
    """`capability`, `deserved`, `guarantee` -> ceiling per resource (None: no ceiling)."""
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

    def key(self, field: str) -> str:
        """The key that would grant it, for the fix."""
        return f"`tenantPolicy.tenants.{self.tenant}.{field}` in the stack file"


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
    return Grant(
        tenant=tenant,
        priority_classes=tuple(pick("priority_classes", tuple(name for name, _ in by_value[:-1]))),
        max_queue_priority=pick("max_queue_priority", 0),
        ceilings={
            "capability": pick("max_capability", None),
            "deserved": pick("max_deserved", None),
            "guarantee": pick("max_guarantee", {}),
        },
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
    )


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
        found = list(_tenant(spec, grant, _mapping(_mapping(raw.get("tenants")).get(tenant)), tenant_files))
        for model, settings in _mapping(raw.get("models")).items():
            if model in spec.config.models:
                found += _model(spec, grant, model, _mapping(settings))
        problems += [Problem(p.path, p.message, p.fix, p.got, file=file) for p in found]
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
            f"remove it, or have the platform team set {grant.key('nonReclaimable')}: true",
            got=False,
        )
    yield from _quotas(grant, join_path(path, "queue"), queue, config.queue)
    for type_name, quota in config.queue.by_type.items():
        written = _mapping(_mapping(queue.get("byType")).get(type_name))
        yield from _quotas(grant, join_path(path, "queue", "byType", type_name), written, quota)
    labels = _mapping(raw.get("labels"))
    level = labels.get(PSA_ENFORCE)
    if isinstance(level, str) and level in LEVELS and LEVELS.index(level) > LEVELS.index(grant.pod_security):
        yield Problem(
            join_path(path, "labels", PSA_ENFORCE),
            f"a tenant file's namespaces may enforce at most the `{grant.pod_security}` Pod Security level",
            f"remove the label, or have the platform team set {grant.key('podSecurity')}",
            got=level,
        )
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


def _quotas(grant: Grant, path: str, written: Mapping[str, Any], quota: Any) -> Iterator[Problem]:
    for kind in ("capability", "deserved", "guarantee"):
        if kind not in written:
            continue
        ceiling = grant.ceilings[kind]
        if ceiling is None:
            continue
        for resource, amount in getattr(quota, kind).items():
            limit = ceiling.get(resource)
            field = "max" + kind.capitalize()
            if limit is None and kind == "guarantee":
                yield Problem(
                    join_path(path, kind, resource),
                    f"a tenant file may not guarantee `{resource}` (a guarantee is held back from every other queue)",
                    f"remove it, or have the platform team grant a ceiling in {grant.key(field)}",
                    got=amount,
                )
            elif limit is not None and quantity_value(amount) > quantity_value(limit):
                yield Problem(
                    join_path(path, kind, resource),
                    f"a tenant file's {kind} of `{resource}` may be at most {limit}",
                    f"lower it, or have the platform team raise {grant.key(field)}",
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
            f"remove it, or have the platform team set {grant.key('unpreemptableModels')}: true",
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
    yield from _privileges(grant, path, raw, config)
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
    for variable in _mapping(raw.get("env")):
        value = config.env.get(variable)
        if isinstance(value, SecretRef) and value.secret not in grant.secrets:
            yield _secret(grant, join_path(path, "env", variable, "secret"), value.secret)
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


def _privileges(grant: Grant, path: str, raw: Mapping[str, Any], config: Any) -> Iterator[Problem]:
    """What the tenant's Pod Security level admits: no host paths or unconfined seccomp below
    `privileged`, and only the level's capabilities."""
    if grant.pod_security == "privileged":
        return
    fix = f"remove it, or have the platform team set {grant.key('podSecurity')}: privileged"
    for volume in _mapping(raw.get("volumes")):
        settings = config.volumes.get(volume)
        if settings is not None and settings.host_path is not None:
            yield Problem(
                join_path(path, "volumes", volume, "hostPath"),
                f"a host path is beyond the `{grant.pod_security}` Pod Security level of tenant `{grant.tenant}`",
                fix,
                got=settings.host_path,
            )
    if raw.get("seccompProfile") == "Unconfined":
        yield Problem(
            join_path(path, "seccompProfile"),
            f"an unconfined seccomp profile is beyond the `{grant.pod_security}` Pod Security level of tenant "
            f"`{grant.tenant}`",
            fix,
            got="Unconfined",
        )
    allowed = BASELINE_CAPABILITIES if grant.pod_security == "baseline" else RESTRICTED_CAPABILITIES
    if "capabilities" in raw:
        for index, capability in enumerate(config.capabilities or ()):
            if capability not in allowed:
                yield Problem(
                    join_path(path, "capabilities", index),
                    f"`{capability}` is beyond the `{grant.pod_security}` Pod Security level of tenant "
                    f"`{grant.tenant}`",
                    fix,
                    got=capability,
                )
