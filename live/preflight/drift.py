"""Objects the stack manages that changed on the cluster, and namespaces it kept but no longer
manages.

Drift is told apart by who made it, because that decides what the next run does. The provider
applies server-side and takes over, in an update, only the fields of the managers it knows
(`kubectl`, `before-first-apply`, its own client-side ones: `fixCSAFieldManagers` in
pulumi-kubernetes provider/pkg/await/await.go), and never in a preview: a field `kubectl` changed
is set back by `pulumi up --refresh` while `pulumi preview --refresh` fails on it; a field another
manager holds (an ops console's server-side apply, a script's PUT) fails both, in every run, until
the stack forces its fields (`cluster.forceFieldOwnership`) or that manager gives it up.

A tenant's namespaces are kept when it is removed (`retainNamespaces`), and its queue is deleted:
a namespace with the platform's labels whose tenant has no queue on the cluster was kept, not
managed. Added back, the provider creates it anew and (from pulumi-kubernetes 4.29 on, which
creates client-side) fails with AlreadyExists; adopting it imports it instead.
"""

from __future__ import annotations

from typing import Any

from config.platform_labels import TENANT_LABEL
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.objects import TAKEN_OVER_MANAGERS, differences, field_managers, managed_by_stack
from live.preflight.report import Finding, Report, listed
from offline.manifests import Rendered
from offline.markdown import code


def check_drift(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
    imports = {entry["file"] for entry in rendered.index if entry.get("import")}
    forced = spec.config.cluster.force_field_ownership
    for obj in rendered.objects:
        if obj.patch or obj.file in imports:
            continue
        live = state.find(obj.kind, obj.name, obj.namespace)
        if live is None or not managed_by_stack(live):
            continue
        subject = f"{obj.kind} {obj.namespace + '/' if obj.namespace else ''}{obj.name}"
        if obj.kind == "Namespace" and _retained(spec, state, live):
            report.add(_retained_finding(subject, live))
            continue
        owned = [(line, field_managers(live, line.split(": ", 1)[0])) for line in differences(obj, live)]
        others = sorted({m for _, managers in owned for m in managers if not m.startswith(TAKEN_OVER_MANAGERS)})
        if others:
            report.add(_foreign(subject, others, owned, forced))
        elif owned:
            report.add(
                Finding(
                    "drift",
                    "warning",
                    subject,
                    "changed on the cluster since the last `pulumi up` (by `kubectl` or with no manager): "
                    "`pulumi up --refresh` sets it back, and `pulumi preview --refresh` fails on it until then",
                    "run `pulumi up --refresh`, or make the stack say what the cluster has now",
                    listed([f"{line} (owned by {', '.join(m) or 'no manager'})" for line, m in owned]),
                )
            )


def _foreign(subject: str, others: list[str], owned: list[tuple[str, list[str]]], forced: bool) -> Finding:
    managers = ", ".join(code(m) for m in others)
    if forced:
        return Finding(
            "drift-other-manager",
            "warning",
            subject,
            f"fields the stack sets are held by {managers}; `cluster.forceFieldOwnership` takes them back at the "
            "next `pulumi up --refresh` (a controller among those managers would set them again)",
            "review what the other manager changed: `pulumi up --refresh` overwrites it",
            listed([f"{line} (owned by {', '.join(m) or 'no manager'})" for line, m in owned]),
        )
    return Finding(
        "drift-other-manager",
        "error",
        subject,
        f"fields the stack sets are held by {managers}: every `pulumi preview --refresh` and `pulumi up --refresh` "
        "fails with a server-side-apply conflict until the stack takes them back or that manager gives them up",
        "set `cluster.forceFieldOwnership: true` in a reviewed change (the next `pulumi up --refresh` takes them "
        "back), or make the stack say what the cluster has and remove the other manager's claim "
        '(docs/operations.md, "Drift")',
        listed([f"{line} (owned by {', '.join(m) or 'no manager'})" for line, m in owned]),
    )


def _tenant_of(live: dict[str, Any]) -> str:
    return str(((live.get("metadata") or {}).get("labels") or {}).get(TENANT_LABEL, ""))


def _retained(spec: PlatformSpec, state: ClusterState, live: dict[str, Any]) -> bool:
    """A namespace the platform labelled whose tenant has no queue on the cluster (queues are
    deleted with their tenant, namespaces kept). Unknown when the input lists no queues."""
    tenant = _tenant_of(live)
    if "Queue" not in state.listed or tenant not in spec.tenants:
        return False
    return state.find("Queue", spec.tenants[tenant].queue_name) is None


def _retained_finding(subject: str, live: dict[str, Any]) -> Finding:
    tenant = _tenant_of(live)
    return Finding(
        "exists-retained",
        "error",
        subject,
        f"was kept on the cluster when tenant `{tenant}` was removed (its queue is gone): it is in no stack's "
        "state, so `pulumi up` creates it anew and fails with AlreadyExists",
        f"adopt it with `tenants.{tenant}.adopt: [namespaces]` for that `pulumi up` (it is imported, then "
        "updated in place), then remove `adopt`",
    )
