"""The gate after `up`: the stack's own workloads, as the cluster has them once `up` is done.

A Deployment serves when its available replicas reach its replicas, a LeaderWorkerSet when its
`Available` condition is true (LWS's `LeaderWorkerSetAvailable`, `config/upstream/lws.py`), and a
gang is scheduled when Volcano has moved its PodGroup to `Running` (volcano v1.15.1
pkg/scheduler/framework/session.go, `getPodGroupPhase`): a PodGroup left `Pending` or `Inqueue` fails the gate with
the condition Volcano wrote on it, which says why. Which objects are the stack's comes from its
state (the resources `up` recorded), so a model added or removed by the change is judged as
deployed. An object asked for zero replicas (scaled to zero) passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from components.inference.gang_reason import ClusterAccess, podgroup_state
from config.upstream.lws import LWS_API_VERSION
from config.upstream.volcano import PODGROUP_API_VERSION
from fleet.gates import GateResult

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LWS = f"kubernetes:{LWS_API_VERSION}:LeaderWorkerSet"
PODGROUP = f"kubernetes:{PODGROUP_API_VERSION}:PodGroup"
READ_TIMEOUT_SECONDS = 20


@dataclass(frozen=True)
class Workload:
    kind: str
    """Deployment, LeaderWorkerSet or PodGroup."""
    namespace: str
    name: str


def stack_workloads(resources: Iterable[dict[str, Any]]) -> list[Workload]:
    """The Deployments, LeaderWorkerSets and PodGroups of a stack's state (`pulumi stack export`)."""
    kinds = {DEPLOYMENT: "Deployment", LWS: "LeaderWorkerSet", PODGROUP: "PodGroup"}
    found = []
    for resource in resources:
        kind = kinds.get(resource.get("type", ""))
        metadata = ((resource.get("outputs") or {}).get("metadata")) or ((resource.get("inputs") or {}).get("metadata"))
        if kind is None or not isinstance(metadata, dict) or not metadata.get("name"):
            continue
        found.append(Workload(kind, str(metadata.get("namespace") or "default"), str(metadata["name"])))
    return sorted(found, key=lambda w: (w.kind, w.namespace, w.name))


def not_serving(workload: Workload, live: dict[str, Any] | None) -> str | None:
    """Why the object does not serve yet, or None when it does (pure)."""
    if live is None:
        return "not found on the cluster"
    spec, status = live.get("spec") or {}, live.get("status") or {}
    if workload.kind == "PodGroup":
        if (spec.get("minMember") or 0) == 0 or status.get("phase") in ("Running", "Completed"):
            return None
        return podgroup_state(live)
    if spec.get("replicas") == 0:
        return None
    if workload.kind == "Deployment":
        available, wanted = status.get("availableReplicas") or 0, spec.get("replicas", 1)
        return None if available >= wanted else f"{available} of {wanted} replicas available"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Available" and condition.get("status") == "True":
            return None
    return f"not Available ({status.get('readyReplicas') or 0} of {spec.get('replicas', 1)} groups ready)"


def _read(access: ClusterAccess, workloads: list[Workload]) -> dict[Workload, dict[str, Any] | None]:
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    with access.kubectl_args() as args:
        path = args[args.index("--kubeconfig") + 1] if "--kubeconfig" in args else None
        api = config.new_client_from_config(config_file=path, context=access.context)
    apps, custom = client.AppsV1Api(api), client.CustomObjectsApi(api)
    out: dict[Workload, dict[str, Any] | None] = {}
    for workload in workloads:
        try:
            if workload.kind == "Deployment":
                out[workload] = api.sanitize_for_serialization(
                    apps.read_namespaced_deployment(
                        workload.name, workload.namespace, _request_timeout=READ_TIMEOUT_SECONDS
                    )
                )
                continue
            group, version = (LWS_API_VERSION if workload.kind == "LeaderWorkerSet" else PODGROUP_API_VERSION).split(
                "/"
            )
            plural = "leaderworkersets" if workload.kind == "LeaderWorkerSet" else "podgroups"
            out[workload] = custom.get_namespaced_custom_object(  # type: ignore[assignment]
                group, version, workload.namespace, plural, workload.name, _request_timeout=READ_TIMEOUT_SECONDS
            )
        except ApiException as error:
            if error.status != 404:
                raise
            out[workload] = None
    return out


def workloads_gate(access: ClusterAccess, workloads: list[Workload], stack: str) -> GateResult:
    """Every Deployment, LeaderWorkerSet and PodGroup of the stack serving or scheduled."""
    try:
        live = _read(access, workloads)
    except Exception as error:  # an unreachable cluster is the gate's finding, not a crash
        return GateResult("workloads", False, f"cannot read the cluster: {type(error).__name__}: {error}"[:600],
                          "make the stack's cluster readable (`cluster.kubeconfig`, `cluster.context`)")  # fmt: skip
    failing = [(w, why) for w in workloads if (why := not_serving(w, live[w])) is not None]
    failing.sort(key=lambda item: item[0].kind != "PodGroup")  # a gang's PodGroup says why its pods wait
    if not failing:
        counted = {
            kind: sum(w.kind == kind for w in workloads) for kind in ("Deployment", "LeaderWorkerSet", "PodGroup")
        }
        return GateResult("workloads", True, ", ".join(f"{n} {k}(s)" for k, n in counted.items() if n) + " serving"
                          if workloads else "no workload")  # fmt: skip
    first, why = failing[0]
    model = first.name
    return GateResult(
        "workloads",
        False,
        f"{first.kind} {first.namespace}/{first.name}: {why}"[:800]
        + (f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""),
        f"volcano-platform explain {model} --stack {stack} says why it waits",
    )
