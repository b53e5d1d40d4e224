"""What a tenant file's pods may do, checked on each rendered pod template: the Secrets they read,
their volume sources, host access below `privileged`, network attachments, the nodes they can
reach (pools and tolerations) and the devices they request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from config.checks.security import BASELINE_CAPABILITIES
from config.checks.tenancy.provenance import Scope, Source, priority_class, secret_allowed
from config.errors import Problem
from config.spec.pool_choice import toleration_matches
from config.spec.pools import Pool
from config.spec.tenancy.grants import Grant, ceiling
from config.upstream.kubernetes import MULTUS_ANNOTATION

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
SAFE_VOLUMES = frozenset({"emptyDir", "configMap", "downwardAPI", "persistentVolumeClaim"})
"""Volume sources that reach nothing outside the pod's own namespace."""
PROJECTED_SAFE = frozenset({"configMap", "downwardAPI", "serviceAccountToken", "clusterTrustBundle"})


def pod_spec(
    scope: Scope, source: Source, grant: Grant, what: str, namespace: str, pod: Mapping[str, Any]
) -> Iterator[Problem]:
    yield from priority_class(scope, source, grant, what, pod.get("priorityClassName"))
    containers = [c for key in ("initContainers", "containers") for c in pod.get(key) or [] if isinstance(c, Mapping)]
    resources = {
        name
        for c in containers
        for part in ("requests", "limits")
        for name in ((c.get("resources") or {}).get(part) or {})
    }
    accelerated = any(r == scope.spec.gpu_resource or _extended(r) for r in resources)
    if accelerated and pod.get("schedulerName") != "volcano":
        yield source.at(
            scope,
            pod.get("schedulerName") or "default-scheduler",
            f"{what} requests accelerators or devices outside Volcano (scheduler "
            f"`{pod.get('schedulerName') or 'default-scheduler'}`), past its queue's quota",
            "remove what sets the scheduler",
        )
    for resource in sorted(resources):
        if not _extended(resource) or resource == scope.spec.gpu_resource:
            continue
        if any(resource == pool.resource for pool in scope.spec.pools.values()):
            continue
        limit = ceiling(scope.spec, grant, "capability", resource)
        if limit is None or not limit.written:
            yield source.at(
                scope,
                resource,
                f"{what} requests `{resource}`, a device in no quota of tenant `{source.tenant}`",
                f"have the platform team grant a ceiling in {grant.key('maxCapability')} (the tenant's queue then "
                "counts it)",
                as_key=True,
            )
    yield from _secrets_read(scope, source, grant, what, namespace, pod, containers)
    yield from _volumes(scope, source, grant, what, pod)
    account = pod.get("serviceAccountName")
    if account not in (None, "default") and account not in scope.created.get((namespace, "ServiceAccount"), set()):
        message = f"{what} runs as service account `{account}`, which the stack does not make"
        yield source.at(scope, account, message, "remove it")
    yield from _host_access(scope, source, grant, what, pod, containers)
    yield from _placement(scope, source, grant, what, pod, accelerated)


def _extended(resource: str) -> bool:
    return resource not in STANDARD_RESOURCES and not resource.startswith("hugepages-")


def _secrets_read(
    scope: Scope,
    source: Source,
    grant: Grant,
    what: str,
    namespace: str,
    pod: Mapping[str, Any],
    containers: list[Mapping[str, Any]],
) -> Iterator[Problem]:
    pulls = [str(ref.get("name")) for ref in pod.get("imagePullSecrets") or []]
    for name in dict.fromkeys(pulls):
        if not secret_allowed(scope, grant, namespace, name, pull=True):
            yield source.at(
                scope,
                name,
                f"{what} pulls with the Secret `{name}`, which is not granted to tenant `{source.tenant}`",
                f"have the platform team grant it in {grant.key('registries')}",
            )
    names: list[str] = []
    for container in containers:
        for variable in container.get("env") or []:
            ref = ((variable.get("valueFrom") or {}).get("secretKeyRef")) or {}
            if ref.get("name"):
                names.append(str(ref["name"]))
        for source_ref in container.get("envFrom") or []:
            if (source_ref.get("secretRef") or {}).get("name"):
                names.append(str(source_ref["secretRef"]["name"]))
    for volume in pod.get("volumes") or []:
        if (volume.get("secret") or {}).get("secretName"):
            names.append(str(volume["secret"]["secretName"]))
        for projected in (volume.get("projected") or {}).get("sources") or []:
            if (projected.get("secret") or {}).get("name"):
                names.append(str(projected["secret"]["name"]))
    for name in dict.fromkeys(names):
        if not secret_allowed(scope, grant, namespace, name):
            yield source.at(
                scope,
                name,
                f"{what} reads the Secret `{name}`, which is not granted to tenant `{source.tenant}`",
                f"have the platform team grant it in {grant.key('secrets')} (or {grant.key('registries')})",
            )


def _volumes(scope: Scope, source: Source, grant: Grant, what: str, pod: Mapping[str, Any]) -> Iterator[Problem]:
    for volume in pod.get("volumes") or []:
        kinds = [k for k in volume if k != "name"]
        for kind in kinds:
            if kind in SAFE_VOLUMES or kind == "secret":
                continue
            if kind == "projected":
                sources = (volume.get("projected") or {}).get("sources") or []
                for entry in sources:
                    for part in entry:
                        if part not in PROJECTED_SAFE and part != "secret":
                            yield source.at(scope, part, f"{what} projects a `{part}` volume", "remove it", as_key=True)
            elif kind == "hostPath":
                path = (volume.get("hostPath") or {}).get("path")
                if grant.pod_security != "privileged":
                    yield source.at(
                        scope,
                        path,
                        f"{what} mounts the node's `{path}`, beyond tenant `{source.tenant}`'s "
                        f"`{grant.pod_security}` Pod Security level",
                        f"remove it, or have the platform team set {grant.key('podSecurity', 'privileged')}",
                    )
            elif kind == "nfs":
                nfs = volume.get("nfs") or {}
                server, path = str(nfs.get("server")), str(nfs.get("path"))
                if not grant.nfs_granted(server, path):
                    yield source.at(
                        scope,
                        server,
                        f"{what} mounts the NFS export `{server}:{path}`, which is not granted to tenant "
                        f"`{source.tenant}`",
                        f"have the platform team grant it in {grant.key('nfs')}",
                    )
            else:
                yield source.at(
                    scope,
                    kind,
                    f"{what} mounts a `{kind}` volume, a source the platform grants no tenant file",
                    "remove it",
                    as_key=True,
                )


def _host_access(
    scope: Scope,
    source: Source,
    grant: Grant,
    what: str,
    pod: Mapping[str, Any],
    containers: list[Mapping[str, Any]],
) -> Iterator[Problem]:
    """What the `baseline` level refuses besides host paths, for tenants below `privileged` (the
    API server refuses it too; this names the key)."""
    if grant.pod_security == "privileged":
        return
    fix = f"remove it, or have the platform team set {grant.key('podSecurity', 'privileged')}"
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            yield source.at(scope, key, f"{what} shares the node's {key[4:]} namespace", fix, as_key=True)
    seccomp = ((pod.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    for container in containers:
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            yield source.at(scope, "privileged", f"{what} runs a privileged container", fix, as_key=True)
        for capability in (context.get("capabilities") or {}).get("add") or []:
            if capability not in BASELINE_CAPABILITIES:
                yield source.at(scope, capability, f"{what} adds the capability {capability}, beyond `baseline`", fix)
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                yield source.at(scope, port["hostPort"], f"{what} binds the node's port {port['hostPort']}", fix)
        if ((context.get("seccompProfile") or {}).get("type") or seccomp) == "Unconfined":
            yield source.at(scope, "Unconfined", f"{what} runs without a seccomp filter", fix)


def attachments(
    scope: Scope, source: Source, grant: Grant, what: str, metadata: Mapping[str, Any]
) -> Iterator[Problem]:
    """Multus attachments (`k8s.v1.cni.cncf.io/networks`) only in the tenant's namespaces or granted."""
    own = set(scope.spec.tenants[source.tenant].namespaces)
    home = metadata.get("namespace")
    for namespace, name in multus_networks(str((metadata.get("annotations") or {}).get(MULTUS_ANNOTATION) or "")):
        where = namespace or home
        if where in own or f"{where}/{name}" in grant.networks:
            continue
        yield source.at(
            scope,
            name,
            f"{what} attaches the network `{where}/{name}`, in a namespace that is not tenant `{source.tenant}`'s",
            f"use one in its own namespaces, or have the platform team grant it in {grant.key('networks')}",
        )


def multus_networks(annotation: str) -> list[tuple[str | None, str]]:
    """(namespace or None, name) of each network an annotation value attaches."""
    text = annotation.strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            return [(None, text)]
        return [(item.get("namespace"), str(item.get("name"))) for item in items if isinstance(item, Mapping)]
    found: list[tuple[str | None, str]] = []
    for item in text.split(","):
        name = item.strip().split("@", 1)[0]
        namespace, _, rest = name.rpartition("/")
        found.append((namespace or None, rest))
    return found


def _placement(
    scope: Scope, source: Source, grant: Grant, what: str, pod: Mapping[str, Any], accelerated: bool
) -> Iterator[Problem]:
    for toleration in pod.get("tolerations") or []:
        if toleration.get("operator") == "Exists" and not toleration.get("key"):
            yield source.at(
                scope,
                "Exists",
                f"{what} tolerates every taint (an `Exists` toleration without a key): control-plane, draining "
                "and other tenants' reserved nodes included",
                "tolerate the GPU nodes' taints by key",
            )
    if grant.pools is None or not scope.spec.pools or not accelerated:
        return
    reachable = [name for name, pool in scope.spec.pools.items() if reaches(pod, pool)]
    outside = sorted(set(reachable) - grant.pools)
    if outside:
        allowed = ", ".join(f"`{p}`" for p in sorted(grant.pools)) or "none"
        yield source.at(
            scope,
            outside[0],
            f"{what} can run on the pool(s) {', '.join(f'`{p}`' for p in outside)}; tenant `{source.tenant}` may "
            f"use {allowed}",
            f"name the pools it runs on (`pools`), or have the platform team grant them in {grant.key('pools')}",
        )


def reaches(pod: Mapping[str, Any], pool: Pool) -> bool:
    """Whether a pod's node selector, required node affinity and tolerations let it onto a pool's
    nodes (labels a pool does not declare may match; its taints must be tolerated)."""
    for key, value in (pod.get("nodeSelector") or {}).items():
        if key in pool.labels and pool.labels[key] != value:
            return False
    terms = (
        (((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"))
        or {}
    ).get("nodeSelectorTerms") or []
    if terms and not any(_term_may_match(term, pool) for term in terms):
        return False
    tolerations = pod.get("tolerations") or []
    return all(
        any(toleration_matches(t, taint) for t in tolerations)
        for taint in pool.taints
        if taint["effect"] in ("NoSchedule", "NoExecute")
    )


def _term_may_match(term: Mapping[str, Any], pool: Pool) -> bool:
    for expression in term.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        if key not in pool.labels:
            continue
        have = pool.labels[key]
        if (operator == "In" and have not in values) or (operator == "NotIn" and have in values):
            return False
        if operator == "DoesNotExist":
            return False
    return True
