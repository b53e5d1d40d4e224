"""Preflight of what the cluster runs now: queues at their capability and PodGroups that wait."""

from __future__ import annotations

from config.schema.quantity import quantity_value
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report, listed, object_name


def check_capacity(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    full: list[str] = []
    for queue in state.queues:
        capability = queue.get("spec", {}).get("capability") or {}
        allocated = queue.get("status", {}).get("allocated") or {}
        for resource, cap in capability.items():
            used = quantity_value(str(allocated.get(resource, 0)))
            report.queues.append(
                {
                    "queue": object_name(queue),
                    "resource": resource,
                    "allocated": str(allocated.get(resource, 0)),
                    "capability": str(cap),
                }
            )
            if used >= quantity_value(str(cap)) and quantity_value(str(cap)) > 0:
                full.append(f"{object_name(queue)}: {allocated.get(resource)} of {cap} {resource}")
    if full:
        report.add(
            Finding(
                "queues-full",
                "warning",
                "tenants",
                f"{len(full)} queue resource(s) are at their capability now; new work there waits",
                "raise the capability, or expect lower quotas to leave work Pending",
                listed(full),
            )
        )
    pending = [
        f"{g['metadata'].get('namespace')}/{object_name(g)} ({g.get('status', {}).get('phase')})"
        for g in state.pod_groups
        if g.get("status", {}).get("phase") in ("Pending", "Inqueue") and not g.get("status", {}).get("running")
    ]
    if pending:
        report.add(
            Finding(
                "podgroups-pending",
                "warning",
                "models",
                f"{len(pending)} PodGroup(s) are waiting now (a gang that cannot fit, or a queue that is full)",
                "`kubectl describe podgroup` shows why; changing quotas or topology may free or block them",
                listed(pending),
            )
        )
