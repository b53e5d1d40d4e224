"""The tenant boundary proven on what a stack renders, not key by key on what it was given.

Every object the program registers passes through here before any of them reaches the engine
(`components.kubernetes.ledger`, `components.platform`). An object a tenant file produced (one in
a namespace of a tenant written in a tenant file, a model of such a file, or its tenant's queue)
may use only what `tenantPolicy` grants that tenant: every Secret it holds or a pod reads, every
volume source, service account, network attachment, node pool, toleration, device, priority class,
queue, hostname and quota, and no reserved label or annotation but the ones the platform itself
sets, with the values it sets. The key-level checks (`config.checks.tenancy.tenant_files`) give the
precise message for the keys they know; this pass is the backstop a new key cannot get around.

A refusal names the tenant file and the key in it that produced the value (found by the value,
as the file wrote it), or the model or tenant entry when no key spells it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from config.checks.tenancy.pod_specs import attachments, pod_spec
from config.checks.tenancy.provenance import Scope, Source, describe, pod_templates, priority_class, secret_allowed
from config.errors import Problem, join_path
from config.platform_labels import (
    ALLOW_UNCONFINED_ANNOTATION,
    MODEL_LABEL,
    RESERVED_PREFIXES,
    ROUTER_LABEL,
    TENANT_LABEL,
)
from config.schema.quantity import quantity_value
from config.spec.platform import PlatformSpec
from config.spec.tenancy.grants import Grant, ceiling, grant_of
from config.upstream.interconnects import GKE_RESERVED_PREFIXES
from config.upstream.kubernetes import PSA_LABEL_PREFIX, PSA_MODES
from config.upstream.volcano import GROUP_NAME_ANNOTATION, PREEMPTABLE_ANNOTATION, QUEUE_ANNOTATION

PLATFORM_KEYS = frozenset(
    {
        TENANT_LABEL,
        MODEL_LABEL,
        ROUTER_LABEL,
        "volcano-platform.io/role",
        "volcano-platform.io/slice",
        "volcano-platform.io/serving-role",
        ALLOW_UNCONFINED_ANNOTATION,
        QUEUE_ANNOTATION,
        GROUP_NAME_ANNOTATION,
        PREEMPTABLE_ANNOTATION,
        *(f"{PSA_LABEL_PREFIX}{mode}" for mode in PSA_MODES),
    }
)
"""The reserved keys the platform sets; their values are checked below."""


def check_rendered_boundary(spec: PlatformSpec, objects: Iterable[Mapping[str, Any]]) -> list[Problem]:
    """Problems, each at its tenant file's key, for every rendered object that uses what its
    tenant is not granted. `objects`: the manifests (or a Helm release's inputs, skipped) in the
    order they were registered."""
    manifests = [obj for obj in objects if isinstance(obj.get("metadata"), Mapping) and obj.get("kind")]
    scope = _scope(spec, manifests)
    if not any(scope.bound(t) for t in scope.grants):
        return []
    problems: list[Problem] = []
    seen: set[tuple[str, str, str | None]] = set()
    for obj in manifests:
        for problem in _object(scope, obj):
            key = (problem.file or "", problem.path, problem.message)
            if key not in seen:
                seen.add(key)
                problems.append(problem)
    return problems


def _scope(spec: PlatformSpec, manifests: list[Mapping[str, Any]]) -> Scope:
    tenant_of_namespace = {ns: name for name, tenant in spec.tenants.items() for ns in tenant.namespaces}
    grants = {name: grant_of(spec, name) for name in spec.tenant_files if name in spec.tenants}
    scope = Scope(spec, tenant_of_namespace, grants)
    for obj in manifests:
        metadata = obj["metadata"]
        namespace = metadata.get("namespace")
        if namespace:
            scope.created.setdefault((namespace, obj["kind"]), set()).add(str(metadata.get("name")))
    for name, tenant in spec.tenants.items():
        owner = tenant.parent if tenant.accelerator_type else name
        if owner is not None:
            scope.queues_of.setdefault(owner, set()).add(tenant.queue_name)
    return scope


def _source(scope: Scope, obj: Mapping[str, Any]) -> Source | None:
    metadata = obj["metadata"]
    labels = metadata.get("labels") or {}
    model = labels.get(MODEL_LABEL) or labels.get("app.kubernetes.io/part-of")
    if model in scope.spec.models:
        file = scope.spec.file_of_model(model)
        if file is None:
            return None  # a model of the platform's files, in whatever namespace: the platform's choice
        return Source(scope.spec.models[model].tenant, file, model)
    if obj["kind"] == "Queue":
        tenant = labels.get(TENANT_LABEL)
    else:
        tenant = scope.tenant_of_namespace.get(metadata.get("namespace") or metadata.get("name") or "")
        if obj["kind"] != "Namespace" and not metadata.get("namespace"):
            tenant = None
    if not scope.bound(tenant):
        return None
    assert tenant is not None
    return Source(tenant, scope.spec.tenant_files[tenant], None)


def _object(scope: Scope, obj: Mapping[str, Any]) -> Iterator[Problem]:
    source = _source(scope, obj)
    if source is None:
        return
    grant = scope.grants[source.tenant]
    what = describe(obj)
    yield from _reserved(scope, source, grant, what, obj["metadata"], obj)
    kind = obj["kind"]
    if kind == "Namespace":
        yield from _namespace(scope, source, grant, obj)
    elif kind == "Secret":
        yield from _secret_object(scope, source, grant, obj)
    elif kind == "Queue":
        yield from _queue(scope, source, grant, obj)
    elif kind == "PodGroup":
        yield from _pod_group(scope, source, grant, what, obj.get("spec") or {})
    elif kind == "RoleBinding":
        yield from _role_binding(scope, source, what, obj)
    elif kind in ("ClusterRole", "ClusterRoleBinding", "DaemonSet"):
        yield source.at(scope, kind, f"a tenant file produced {what}", "remove what produced it", as_key=False)
    elif kind == "Service":
        yield from _service(scope, source, what, obj)
    elif kind == "HTTPRoute":
        yield from _route(scope, source, grant, what, obj)
    namespace = obj["metadata"].get("namespace")
    for where, template in pod_templates(obj):
        template_what = f"{what}{where}"
        metadata = {"namespace": namespace, **(template.get("metadata") or {})}
        yield from _reserved(scope, source, grant, template_what, metadata, obj)
        yield from attachments(scope, source, grant, template_what, metadata)
        yield from pod_spec(scope, source, grant, template_what, namespace or "", template.get("spec") or {})


def _reserved(
    scope: Scope, source: Source, grant: Grant, what: str, metadata: Mapping[str, Any], obj: Mapping[str, Any]
) -> Iterator[Problem]:
    """Reserved keys only as the platform sets them."""
    for field_name in ("labels", "annotations"):
        entries = metadata.get(field_name) or {}
        for key, value in entries.items():
            if not key.startswith(RESERVED_PREFIXES):
                continue
            why = _reserved_value_problem(scope, source, grant, obj, key, str(value))
            if why is None:
                continue
            yield source.at(
                scope,
                key,
                f"{what} carries the {field_name[:-1]} `{key}: {value}`: {why}",
                "remove it; the platform sets what the scheduler and the API server read from its typed settings",
                as_key=True,
            )


def _reserved_value_problem(
    scope: Scope, source: Source, grant: Grant, obj: Mapping[str, Any], key: str, value: str
) -> str | None:
    if key.startswith(GKE_RESERVED_PREFIXES):
        if value in _network_annotations(scope.spec, source.model, key):
            return None
        return "GKE hands the pod node devices or networks by it; the platform sets it from the pool's network profile"
    if key not in PLATFORM_KEYS:
        return "the scheduler, LWS, the API server or the platform acts on it, and a tenant file never sets it"
    namespace = obj["metadata"].get("namespace")
    if key == TENANT_LABEL and value != source.tenant:
        return f"it names tenant `{value}`, not `{source.tenant}`"
    if key == MODEL_LABEL and value not in scope.spec.models:
        return "it names no model of the stack"
    if key == QUEUE_ANNOTATION and value not in scope.queues_of.get(source.tenant, set()):
        return f"Volcano would judge the pods in queue `{value}`, which is not tenant `{source.tenant}`'s"
    if key == GROUP_NAME_ANNOTATION and value not in scope.created.get((namespace or "", "PodGroup"), set()):
        return "it names a PodGroup the stack does not create in this namespace"
    if key == PREEMPTABLE_ANNOTATION and value == "false" and not grant.unpreemptable_models:
        return "the pods would never be preempted, which the tenant's grant does not allow"
    if key == ALLOW_UNCONFINED_ANNOTATION and grant.pod_security != "privileged":
        return f"it lifts seccomp beyond the tenant's `{grant.pod_security}` Pod Security level"
    if key.startswith(PSA_LABEL_PREFIX) and (obj["kind"] != "Namespace" or value != grant.pod_security):
        return f"the tenant's namespaces enforce its granted level, `{grant.pod_security}`"
    return None


def _network_annotations(spec: PlatformSpec, model_name: str | None, key: str) -> set[str]:
    """The values the model's pool network profile gives the annotation `key` on its pods."""
    model = spec.models.get(model_name or "")
    views = (model, *model.role_views) if model is not None else ()
    return {view.network_annotations[key] for view in views if key in view.network_annotations}


def _namespace(scope: Scope, source: Source, grant: Grant, obj: Mapping[str, Any]) -> Iterator[Problem]:
    labels = obj["metadata"].get("labels") or {}
    for mode in PSA_MODES:
        if labels.get(f"{PSA_LABEL_PREFIX}{mode}") != grant.pod_security:
            yield source.at(
                scope,
                None,
                path=join_path("tenants", source.tenant),
                message=f"{describe(obj)} does not {mode} the tenant's `{grant.pod_security}` Pod Security level",
                fix="report this: the platform labels every tenant namespace with its level",
            )


def _secret_object(scope: Scope, source: Source, grant: Grant, obj: Mapping[str, Any]) -> Iterator[Problem]:
    name = str(obj["metadata"].get("name"))
    namespace = obj["metadata"].get("namespace") or ""
    if not secret_allowed(scope, grant, namespace, name, pull=True):
        yield source.at(
            scope,
            name,
            f"{describe(obj)}: a copy of `{name}` would be made in tenant `{source.tenant}`'s namespace, and "
            "it is not granted to that tenant",
            f"have the platform team grant it in {grant.key('secrets')} (or {grant.key('registries')})",
        )


def _platform_queue(spec: PlatformSpec, source: Source) -> bool:
    """Whether the platform's files wrote the tenant's `queue` (a tenant split between them and its
    file): the quota is then the platform's to give, not held to the tenant's grant. Any other
    tenant's Queue is held to it, whatever key produced it."""
    written = ((spec.tenant_file_text.get(source.file) or {}).get("tenants") or {}).get(source.tenant) or {}
    tenant = spec.config.tenants.get(source.tenant)
    return "queue" not in written and tenant is not None and "queue" in tenant.model_fields_set


def _queue(scope: Scope, source: Source, grant: Grant, obj: Mapping[str, Any]) -> Iterator[Problem]:
    spec = scope.spec
    name = str(obj["metadata"].get("name"))
    entry = next((t for t in spec.tenants.values() if t.queue_name == name), None)
    if entry is None or _platform_queue(spec, source):
        return
    queue = obj.get("spec") or {}
    kind = entry.accelerator_type
    for field_name in ("capability", "deserved", "guarantee"):
        amounts = queue.get(field_name) or {}
        if field_name == "guarantee":
            amounts = amounts.get("resource") or {}
        for resource, amount in amounts.items():
            limit = ceiling(spec, grant, field_name, resource, kind)
            grant_field = f"byType.{kind}.max" if kind else "max"
            key = grant.key(f"{grant_field}{field_name.capitalize()}")
            if limit is None and field_name == "guarantee":
                yield source.at(
                    scope,
                    amount,
                    f"Queue `{name}` guarantees {amount} {resource}, and tenant `{source.tenant}` may guarantee none",
                    f"remove it, or have the platform team grant a ceiling in {key}",
                )
            elif limit is not None and quantity_value(str(amount)) > limit.amount:
                yield source.at(
                    scope,
                    amount,
                    f"Queue `{name}` sets {field_name} {amount} of {resource}, over tenant `{source.tenant}`'s ceiling "
                    f"of {limit.text}" + ("" if limit.written else " (the stack's accelerators)"),
                    f"lower it, or have the platform team raise {key}",
                )
    priority = queue.get("priority") or 0
    if isinstance(priority, int) and priority > grant.max_queue_priority:
        yield source.at(
            scope,
            priority,
            f"Queue `{name}` has priority {priority}, over the {grant.max_queue_priority} tenant "
            f"`{source.tenant}` may give it",
            f"lower it, or have the platform team raise {grant.key('maxQueuePriority')}",
        )
    if queue.get("reclaimable") is False and not grant.non_reclaimable:
        yield source.at(
            scope,
            "reclaimable",
            f"Queue `{name}` is not reclaimable, which tenant `{source.tenant}`'s grant does not allow",
            f"remove it, or have the platform team set {grant.key('nonReclaimable', 'true')}",
            as_key=True,
        )
    parent = queue.get("parent")
    if parent:
        owner = next((t for t in spec.tenants.values() if t.queue_name == parent), None)
        if (
            owner is not None
            and owner.name != source.tenant
            and owner.name in spec.tenant_files
            and owner.name not in grant.parents
        ):
            yield source.at(
                scope,
                owner.name,
                f"Queue `{name}` sits under `{parent}`, another tenant file's queue, and would share its quota",
                f"remove it, or have the platform team grant it in {grant.key('parents')}",
            )


def _pod_group(scope: Scope, source: Source, grant: Grant, what: str, spec: Mapping[str, Any]) -> Iterator[Problem]:
    queue = spec.get("queue")
    if queue is not None and queue not in scope.queues_of.get(source.tenant, set()):
        message = f"{what} is in queue `{queue}`, not one of tenant `{source.tenant}`'s"
        yield source.at(scope, queue, message, "remove it")
    yield from priority_class(scope, source, grant, what, spec.get("priorityClassName"))


def _role_binding(scope: Scope, source: Source, what: str, obj: Mapping[str, Any]) -> Iterator[Problem]:
    namespace = obj["metadata"].get("namespace") or ""
    role = obj.get("roleRef") or {}
    if role.get("kind") != "Role" or role.get("name") not in scope.created.get((namespace, "Role"), set()):
        message = f"{what} binds something other than a Role of its namespace"
        yield source.at(scope, role.get("name"), message, "remove it")
    for subject in obj.get("subjects") or []:
        if subject.get("kind") != "ServiceAccount" or subject.get("namespace", namespace) != namespace:
            yield source.at(
                scope, subject.get("name"), f"{what} grants to a subject outside its namespace", "remove it"
            )


def _service(scope: Scope, source: Source, what: str, obj: Mapping[str, Any]) -> Iterator[Problem]:
    spec = obj.get("spec") or {}
    if spec.get("type", "ClusterIP") != "ClusterIP" or spec.get("externalIPs"):
        yield source.at(
            scope,
            spec.get("type"),
            f"{what} is exposed outside the cluster ({spec.get('type')})",
            "serve it through the inference gateway",
        )


def _route(scope: Scope, source: Source, grant: Grant, what: str, obj: Mapping[str, Any]) -> Iterator[Problem]:
    gateway = scope.spec.gateway
    hostnames = gateway.hostnames if gateway is not None else {}
    allowed = {h for t in (source.tenant, *grant.consumers) for h in hostnames.get(t, ())}
    for hostname in (obj.get("spec") or {}).get("hostnames") or []:
        if hostname not in allowed:
            yield source.at(
                scope,
                hostname,
                f"{what} answers on `{hostname}`, a hostname of a tenant `{source.tenant}` does not serve",
                f"have the platform team grant the consumer in {grant.key('consumers')}",
            )
