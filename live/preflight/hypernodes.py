"""The HyperNodes on the cluster, as Volcano's scheduler will read them.

A HyperNode listed as a member of two HyperNodes makes the scheduler's HyperNode cache fail to
build (`pkg/scheduler/api/hyper_node_info.go` `addChild`: "already has a parent"), and while it
is not ready the scheduler places no job with a network topology
(`pkg/scheduler/actions/allocate/allocate.go`, `HyperNodesReadyToSchedule`). Volcano v1.15.1's
label discovery can leave such a pair behind: two discovery runs close together, the second
before the first one's HyperNodes reach its cache, create a second HyperNode above the same
members under a new name, and nothing removes it until discovery runs again, on a change of a
node's topology labels or a HyperNode's deletion (`pkg/controllers/hypernode/discovery/label/label.go`:
`Start`, and `buildHyperNodeName` keeps the first existing HyperNode by name).
"""

from __future__ import annotations

from typing import Any

from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report

SOURCE_LABEL = "volcano.sh/network-topology-source"
"""The label Volcano's discovery puts on the HyperNodes it manages (`api.NetworkTopologySourceLabelKey`)."""


def _hyper_node_members(hyper_node: dict[str, Any]) -> list[str]:
    members = (hyper_node.get("spec") or {}).get("members") or []
    return [
        str(m["selector"]["exactMatch"]["name"])
        for m in members
        if m.get("type") == "HyperNode" and ((m.get("selector") or {}).get("exactMatch") or {}).get("name")
    ]


def check_hypernode_parents(state: ClusterState, report: Report) -> None:
    parents: dict[str, list[str]] = {}
    discovered: set[str] = set()
    for hyper_node in state.hyper_nodes:
        name = str(hyper_node["metadata"]["name"])
        if (hyper_node["metadata"].get("labels") or {}).get(SOURCE_LABEL):
            discovered.add(name)
        for member in _hyper_node_members(hyper_node):
            parents.setdefault(member, []).append(name)
    for member, holders in sorted(parents.items()):
        if len(holders) < 2:
            continue
        holders = sorted(holders)
        extra = [h for h in holders[1:] if h in discovered]
        fix = (
            f"delete the duplicate discovery left behind (its next run keeps `{holders[0]}`, the first by name): "
            + "; ".join(f"`kubectl delete hypernode {h}`" for h in extra)
            if extra and holders[0] in discovered
            else f"keep `{member}` in one of {', '.join(f'`{h}`' for h in holders)} and remove it from the others"
        )
        report.add(
            Finding(
                "hypernode-two-parents",
                "error",
                f"HyperNode {member}",
                f"`{member}` is a member of {', '.join(f'`{h}`' for h in holders)}: Volcano's scheduler does not "
                "build its HyperNode cache then, and places no job with a network topology until one is gone",
                fix,
            )
        )
