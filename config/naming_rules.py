"""Names that must be valid, unique or unreserved across the whole stack.

Kubernetes object names are contracts (queue, class and service names are what workloads and
users refer to), so collisions and reserved names are caught here rather than by the API server.
"""

from __future__ import annotations

from config.errors import Problem, join_path
from config.spec import PlatformSpec
from config.upstream import LWS_NAMESPACE, RESERVED_QUEUES, VOLCANO_NAMESPACE

RESERVED_NAMESPACES = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease", VOLCANO_NAMESPACE, LWS_NAMESPACE}
)
# Namespaces of the cluster's own components (Kubernetes, OpenShift).
RESERVED_NAMESPACE_PREFIXES = ("kube-", "openshift-")


def check_names(spec: PlatformSpec) -> list[Problem]:
    """Names valid one by one (checked by the models) can still collide or be reserved."""
    return [*_queue_names(spec), *_namespaces(spec), *_services(spec)]


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
    for tenant in spec.tenants.values():
        for index, namespace in enumerate(tenant.namespaces):
            path = join_path("tenants", tenant.name, "namespaces", index)
            if namespace in RESERVED_NAMESPACES or namespace.startswith(RESERVED_NAMESPACE_PREFIXES):
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
