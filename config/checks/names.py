"""Names that must be valid, unique or unreserved across the whole stack.

Kubernetes object names are contracts (queue, class and service names are what workloads and
users refer to), so collisions and reserved names are caught here rather than by the API server.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from config.errors import Problem, join_path
from config.schema.names import dns_subdomain_problem
from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_NAMESPACE
from config.upstream.volcano import RESERVED_QUEUES, VOLCANO_NAMESPACE

RESERVED_NAMESPACES = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease", VOLCANO_NAMESPACE, LWS_NAMESPACE}
)
# Namespaces of the cluster's own components (Kubernetes, OpenShift).
RESERVED_NAMESPACE_PREFIXES = ("kube-", "openshift-")


def check_names(spec: PlatformSpec) -> list[Problem]:
    """Names valid one by one (checked by the models) can still collide or be reserved."""
    return [*_queue_names(spec), *_namespaces(spec), *_services(spec), *_hypernode_names(spec)]


def _hypernode_names(spec: PlatformSpec) -> list[Problem]:
    """Domains become HyperNodes of their own name only with `hyperNodes: explicit`; an object's
    name must be a DNS subdomain (lower case), which a label value need not be."""
    topology = spec.topology
    if topology is None or topology.hyper_nodes != "explicit":
        return []
    return [
        Problem(
            domain.path,
            f"the stack creates a HyperNode of this name (`hyperNodes: explicit`), and a HyperNode's name {problem}",
            "rename the domain in lower-case letters, digits, '-' and '.' (the node labels follow), or let "
            "Volcano's controller name the HyperNodes (`hyperNodes: discovery`)",
            got=domain.name,
        )
        for domain in topology.named_domains
        if not domain.generated and (problem := dns_subdomain_problem(domain.name))
    ]


def _queue_names(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    owners: dict[str, str] = {}
    for tenant in spec.config.tenants:
        queue = spec.config.tenants[tenant].queue_name(tenant)
        path = join_path("tenants", tenant, "queue", "name")
        if queue in RESERVED_QUEUES:
            problems.append(
                Problem(
                    path,
                    f"queue name `{queue}` is reserved: the scheduler creates `root` and "
                    "`default` itself and creating them again fails",
                    "choose another name (patch the default queue with `defaultQueue`)",
                    got=queue,
                )
            )
        elif queue in owners:
            problems.append(
                Problem(
                    path,
                    f"queue `{queue}` is also the queue of tenant `{owners[queue]}`",
                    "give every tenant its own queue name",
                    got=queue,
                )
            )
        owners.setdefault(queue, tenant)
    return problems


def _namespaces(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    owners: dict[str, str] = {}
    observability = spec.config.observability
    monitoring = {observability.namespace, observability.dashboard_namespace} if observability.enabled else set()
    for tenant in spec.tenants.values():
        if "namespaces" in tenant.config.adopt and not tenant.namespaces:
            problems.append(
                Problem(
                    join_path("tenants", tenant.name, "adopt", tenant.config.adopt.index("namespaces")),
                    "the tenant has no namespaces (a grouping queue), so there is nothing to adopt",
                    "remove `namespaces` from `adopt`, or list the namespaces to take over",
                    got="namespaces",
                )
            )
        for index, namespace in enumerate(tenant.namespaces):
            path = join_path("tenants", tenant.name, "namespaces", index)
            if namespace in monitoring:
                problems.append(
                    Problem(
                        path,
                        f"namespace `{namespace}` holds the monitoring stack (`observability.namespace`, Prometheus "
                        "and Grafana); a tenant that owns it could read every tenant's metrics or silence the alerts, "
                        "and removing the tenant would delete it",
                        "use a namespace of the tenant's own",
                        got=namespace,
                    )
                )
            elif namespace in RESERVED_NAMESPACES or namespace.startswith(RESERVED_NAMESPACE_PREFIXES):
                problems.append(
                    Problem(
                        path,
                        f"namespace `{namespace}` belongs to the cluster or the platform itself; a tenant that "
                        "owns it could change or delete what runs there",
                        "use a namespace of the tenant's own",
                        got=namespace,
                    )
                )
            elif namespace in owners:
                problems.append(
                    Problem(
                        path,
                        f"namespace `{namespace}` already belongs to tenant `{owners[namespace]}`",
                        "give every tenant its own namespaces",
                        got=namespace,
                    )
                )
            owners.setdefault(namespace, tenant.name)
    return problems


def _services(spec: PlatformSpec) -> list[Problem]:
    """Service names per namespace: the models' Services and the LWS headless Services (LWS
    creates one named exactly like each LeaderWorkerSet)."""
    problems: list[Problem] = []
    owners: dict[tuple[str, str], tuple[str, bool]] = {}  # (namespace, name) -> (model, headless)
    claims: list[tuple[str, str, str, bool, str]] = []  # namespace, name, model, headless, path
    for model in spec.models.values():
        path = join_path("models", model.name)
        if model.multi_node:
            claims.append((model.namespace, model.name, model.name, True, path))
        for view in model.slice_views():  # each role of each slice is a LeaderWorkerSet
            claims.append((model.namespace, view.workload_name, model.name, True, path))
        claims.append((model.namespace, model.service_name, model.name, False, join_path(path, "serviceName")))
    for namespace, name, model_name, headless, path in claims:
        owner = owners.setdefault((namespace, name), (model_name, headless))
        if owner == (model_name, headless):
            continue
        other, other_headless = owner
        if other == model_name:
            message = f"the model's Service `{name}` collides with its LeaderWorkerSet's headless Service"
        else:
            kind = "the headless Service of the LeaderWorkerSet" if other_headless else "the Service"
            message = f"Service `{name}` in namespace `{namespace}` is already {kind} of model `{other}`"
        problems.append(Problem(path, message, "set a distinct `serviceName`", got=name))
    return problems


STANDARD_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
_HUGEPAGES = re.compile(r"^hugepages-\d+(Ki|Mi|Gi)$")
# What a component's own requests and limits can name.
COMPONENT_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def known_resources(spec: PlatformSpec) -> list[str]:
    return [*STANDARD_RESOURCES, spec.gpu_resource, *spec.config.cluster.extended_resources]


def _named(spec: PlatformSpec) -> Iterator[tuple[str, str, str]]:
    """(key path, resource name, what names it) for every resource name in the config."""
    config = spec.config
    for tenant, tenant_config in config.tenants.items():
        queue = tenant_config.queue
        for field, quotas in (
            ("capability", queue.capability),
            ("deserved", queue.deserved),
            ("guarantee", queue.guarantee),
        ):
            for name in quotas:
                yield join_path("tenants", tenant, "queue", field, name), name, "quota"
        for kind, typed in queue.by_type.items():
            for field in ("capability", "deserved", "guarantee"):
                for name in getattr(typed, field):
                    yield join_path("tenants", tenant, "queue", "byType", kind, field, name), name, "quota"
    policy = config.tenant_policy
    grants = [(join_path("tenantPolicy", "default"), policy.default)]
    grants += [(join_path("tenantPolicy", "tenants", name), grant) for name, grant in policy.tenants.items()]
    ceilings = {"max_capability": "maxCapability", "max_deserved": "maxDeserved", "max_guarantee": "maxGuarantee"}
    for where, grant in grants:
        for field, key in ceilings.items():
            for name in getattr(grant, field) or {}:
                yield join_path(where, key, name), name, "quota"
        for kind, type_grant in (grant.by_type or {}).items():
            for field, key in ceilings.items():
                for name in getattr(type_grant, field) or {}:
                    yield join_path(where, "byType", kind, key, name), name, "quota"
    if config.default_queue is not None and config.default_queue.capability:
        for name in config.default_queue.capability:
            yield join_path("defaultQueue", "capability", name), name, "quota"
    for model, model_config in config.models.items():
        resources = model_config.resources
        if resources.gpu_resource is not None:
            yield join_path("models", model, "resources", "gpuResource"), resources.gpu_resource, "accelerator"
        for name in resources.devices:
            yield join_path("models", model, "resources", "devices", name), name, "device"
    for name in config.volcano.scheduler.binpack.resources:
        yield join_path("volcano", "scheduler", "binpack", "resources", name), name, "device"


def _unknown(name: str, allowed: list[str], path: str, what: str) -> Problem:
    lowered = {a.lower(): a for a in allowed}
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.75) or (
        [lowered[name.lower()]] if name.lower() in lowered else []
    )
    hint = f"did you mean `{close[0]}`? " if close else ""
    return Problem(
        path,
        f"`{name}` is not a resource the cluster's nodes offer, so a {what} on it "
        + ("limits nothing" if what == "quota" else "can never be satisfied (the pods stay Pending)"),
        f"{hint}use one of: {', '.join(allowed)}, or declare it under `cluster.extendedResources`",
        got=name,
    )


def check_resource_names(spec: PlatformSpec) -> list[Problem]:
    allowed = known_resources(spec)
    extended = [spec.gpu_resource, *spec.config.cluster.extended_resources]
    problems: list[Problem] = []
    for path, name, what in _named(spec):
        if what == "quota" and (name in allowed or _HUGEPAGES.match(name)):
            continue
        if what == "accelerator" and name in extended:
            continue
        if what == "device":
            if name == spec.gpu_resource and path.startswith("models"):
                problems.append(
                    Problem(
                        path,
                        f"`{name}` is the accelerator; as a device it would be requested twice",
                        "set `resources.gpus` instead",
                        got=name,
                    )
                )
                continue
            if name in extended:
                continue
        problems.append(_unknown(name, extended if what != "quota" else allowed, path, what))
    for component in ("scheduler", "controller", "admission"):
        requirements = getattr(spec.config.volcano.resources, component)
        if requirements is None:
            continue
        for field in ("requests", "limits"):
            for name in getattr(requirements, field):
                if name not in COMPONENT_RESOURCES and not _HUGEPAGES.match(name):
                    problems.append(
                        Problem(
                            join_path("volcano", "resources", component, field, name),
                            f"`{name}` is not a resource a Volcano component uses",
                            "use cpu, memory or ephemeral-storage",
                            got=name,
                        )
                    )
    return problems
