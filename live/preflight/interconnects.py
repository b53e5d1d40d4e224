"""Preflight of the pools' network profiles: what the cluster must run before a pod carrying one
can use its interconnect.

GPUDirect-TCPXO reads the NCCL plugin from the node (`/home/kubernetes/bin/nvidia/lib64`), which
Google's `nccl-tcpxo-installer` DaemonSet (kube-system, pods labelled `k8s-app:
nccl-tcpxo-installer`, GoogleCloudPlatform/container-engine-accelerators
`gpudirect-tcpxo/nccl-tcpxo-installer.yaml`) puts there: on a node without it, the daemon and
NCCL find no plugin. A dump that records no pods at all says nothing either way."""

from __future__ import annotations

from config.spec.platform import PlatformSpec
from config.upstream.interconnects import TCPXO, TCPXO_INSTALLER_LABEL
from live.cluster_state import ClusterState
from live.preflight.pools import members
from live.preflight.report import Finding, Report, listed, object_name


def check_interconnects(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    if not state.pods:
        return
    carried = {view.network.profile for m in spec.models.values() for view in (m, *m.role_views) if view.network}
    if TCPXO.name not in carried:
        return
    key, value = TCPXO_INSTALLER_LABEL
    installed = {
        str((pod.get("spec") or {}).get("nodeName"))
        for pod in state.pods
        if ((pod.get("metadata") or {}).get("labels") or {}).get(key) == value
    }
    for name, pool in spec.pools.items():
        network = pool.config.network
        if network is None or network.profile != TCPXO.name:
            continue
        missing = [object_name(node) for node in members(pool, state.nodes) if object_name(node) not in installed]
        if missing:
            report.add(
                Finding(
                    "network-plugin-missing",
                    "warning",
                    f"pools.{name}.network",
                    f"{len(missing)} node(s) of pool `{name}` run no `nccl-tcpxo-installer` pod: {TCPXO.title}'s "
                    "daemon and NCCL find no plugin there, and a multi-node model's pods on them fail",
                    "apply Google's `nccl-tcpxo-installer` DaemonSet (its node selector covering the pool)",
                    details=listed(missing),
                )
            )
