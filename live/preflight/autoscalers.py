"""Preflight of autoscaled pools: is there an autoscaler, and what it will and will not do for a
gang that waits for nodes.

Both Cluster Autoscaler and Karpenter add nodes for pods whose `PodScheduled` condition is False
with reason `Unschedulable`, which Volcano sets on the pending pods of every job it could not place
at the end of each cycle (v1.15.1 `pkg/scheduler/cache/cache.go` `taskUnschedulable`, reasons from
`pkg/scheduler/api/job_info.go` `TaskSchedulingReason`; Cluster Autoscaler
`utils/kubernetes/listers.go`, Karpenter `pkg/utils/pod/scheduling.go` `IsProvisionable`, neither
filters by scheduler name by default). Neither knows gangs: they add nodes for the pods they see,
which may be part of a gang (kubernetes/autoscaler#8783, kubernetes-sigs/karpenter#742); pods that
wait for their queue's capability are marked Unschedulable too and draw nodes no one uses
(volcano-sh/volcano#4710; Volcano's opt-in `SchedulingGatesQueueAdmission` gate holds them back).
"""

from __future__ import annotations

from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report
from offline.markdown import code

AUTOSCALERS = {
    "cluster-autoscaler": "Cluster Autoscaler",
    "karpenter": "Karpenter",
}
"""Image or Deployment name part -> the autoscaler it is."""


def _found(state: ClusterState) -> list[str]:
    found: set[str] = set()
    for deployment in state.deployments:
        name = str((deployment.get("metadata") or {}).get("name", ""))
        pod = (((deployment.get("spec") or {}).get("template") or {}).get("spec")) or {}
        images = [str(c.get("image", "")) for c in pod.get("containers") or [] if isinstance(c, dict)]
        for part, autoscaler in AUTOSCALERS.items():
            if part in name or any(part in image for image in images):
                found.add(autoscaler)
    return sorted(found)


def check_autoscalers(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    autoscaled = {name: pool for name, pool in spec.pools.items() if pool.config.autoscaled}
    managed = [name for name, pool in autoscaled.items() if pool.config.autoscaler == "managed"]
    if managed:
        report.notes.append(
            f"pools {', '.join(code(p) for p in managed)} are scaled by the cloud's managed autoscaler "
            "(`autoscaler: managed`), which runs outside the cluster: nodes are added for pods Volcano marks "
            'Unschedulable, with no notion of gangs (see docs/operations.md, "Gangs on autoscaled pools")'
        )
    scaled = [name for name in autoscaled if name not in managed]
    if not scaled:
        return
    pools = ", ".join(f"`{p}`" for p in scaled)
    found = _found(state)
    if not found:
        report.add(
            Finding(
                "autoscaler-missing",
                "warning",
                "pools",
                f"pools {pools} are autoscaled (`minNodes`/`maxNodes`), but no Cluster Autoscaler or Karpenter runs "
                "in the cluster: models that wait for nodes keep waiting",
                "install the cluster's autoscaler; where the cloud runs it in its managed control plane (GKE, "
                "AKS, EKS Auto Mode), set `autoscaler: managed` on the pools; or give the pools a fixed size (`nodes`)",
            )
        )
        return
    gangs = [m.name for m in spec.models.values() if m.multi_node and m.pools and set(m.pools) & set(scaled)]
    report.notes.append(
        f"autoscaled pools {pools}, with {' and '.join(found)}: nodes are added for pods Volcano marks "
        "Unschedulable, with no notion of gangs"
        + (
            f" ({', '.join(gangs)}: a scale-up may hold part of a gang; nodes it cannot use are removed after the "
            "autoscaler's scale-down delay, 10 minutes by default)"
            if gangs
            else ""
        )
        + "; pods held by their queue's capability draw nodes too (see docs/operations.md, \"Gangs on autoscaled "
        'pools")'
    )
