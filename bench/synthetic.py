"""Synthetic clusters for the scale benchmark: a 3-tier topology, hierarchical tenant queues and a
mix of single- and multi-node models, from 128 to 10,000 nodes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from config.stack_file.reader import StackFile


@dataclass(frozen=True)
class Size:
    name: str
    zones: int
    spines_per_zone: int
    leaves_per_spine: int
    nodes_per_leaf: int
    orgs: int
    teams_per_org: int
    models: int

    @property
    def nodes(self) -> int:
        return self.zones * self.spines_per_zone * self.leaves_per_spine * self.nodes_per_leaf

    @property
    def tenants(self) -> int:
        return self.orgs * (1 + self.teams_per_org)


SIZES = {
    "small": Size("small", 1, 2, 4, 16, 1, 3, 10),
    "1k": Size("1k", 1, 5, 10, 20, 5, 4, 100),
    "large": Size("large", 2, 5, 10, 20, 10, 4, 200),
    "2k": Size("2k", 2, 4, 16, 16, 10, 4, 200),
    "huge": Size("huge", 5, 10, 10, 20, 40, 4, 1000),
}
SCALE_SIZES = ("small", "large", "huge")
"""The sizes `bench/scale.py --size all` renders; `bench/whatif.py` answers at 1,000, 2,048 and
10,000 nodes (`1k`, `2k`, `huge`)."""
GPU = "nvidia.com/gpu"


def synthetic_stack(size: Size) -> dict[str, Any]:
    """A stack of the given size that passes every check (so the whole program runs)."""
    domains: dict[str, Any] = {}
    for z in range(size.zones):
        spines: dict[str, Any] = {}
        for s in range(size.spines_per_zone):
            leaves: dict[str, Any] = {}
            for leaf in range(size.leaves_per_spine):
                name = f"z{z}-s{s}-l{leaf}"
                nodes = f"gpu-{name}-[1-{size.nodes_per_leaf}]"
                # Every fifth leaf has 4-GPU nodes: the inventory is uneven, as real clusters are.
                leaves[name] = {"nodes": [nodes], "gpusPerNode": 4 if leaf % 5 == 4 else 8}
            spines[f"z{z}-s{s}"] = {"domains": leaves}
        domains[f"z{z}"] = {"domains": spines}
    # A tenant file's capability may be at most the stack's accelerators (`tenantPolicy`'s ceiling).
    total_gpus = sum(
        size.nodes_per_leaf * (4 if leaf % 5 == 4 else 8)
        for _ in range(size.zones * size.spines_per_zone)
        for leaf in range(size.leaves_per_spine)
    )
    org_share = size.nodes * 8 // (2 * size.orgs)
    tenants: dict[str, Any] = {}
    teams: list[str] = []
    for o in range(size.orgs):
        org = f"org-{o}"
        tenants[org] = {
            "namespaces": [],
            "queue": {"weight": 1 + o % 3, "capability": {GPU: total_gpus}, "deserved": {GPU: org_share}},
        }
        for t in range(size.teams_per_org):
            team = f"{org}-team-{t}"
            teams.append(team)
            tenants[team] = {
                "queue": {
                    "parent": org,
                    "capability": {GPU: total_gpus},
                    "deserved": {GPU: org_share // size.teams_per_org},
                    "reclaimable": t % 2 == 0,
                }
            }
    models: dict[str, Any] = {}
    for m in range(size.models):
        team = teams[m % len(teams)]
        if m % 5 == 0:
            node_count = 2 + m % 3
            models[f"multi-{m}"] = {
                "tenant": team,
                "nodesPerReplica": node_count,
                "replicas": 1 + m % 2,
                "resources": {"gpus": 8, "cpu": 32, "memory": "256Gi", "devices": {"rdma/hca": 1}},
                "engine": {"tensorParallelSize": 8, "pipelineParallelSize": node_count},
                "topology": [{"mode": "hard", "highestTier": 1}, {"mode": "hard", "highestTier": 2}, {"mode": "soft"}][
                    m % 3
                ],
                "source": {"model": f"model-{m}"},
            }
        else:
            gpus = [1, 1, 2, 4][m % 4]
            models[f"single-{m}"] = {
                "tenant": team,
                "replicas": 1 + m % 3,
                "resources": {"gpus": gpus, "cpu": 4 * gpus, "memory": f"{32 * gpus}Gi"},
                "source": {"model": f"model-{m}"},
                "engine": {"maxModelLen": 8192},
            }
    return {
        "cluster": {"name": f"bench-{size.name}", "gpusPerNode": 8, "extendedResources": ["rdma/hca"]},
        "topology": {
            "tiers": ["bench.example.com/leaf", "bench.example.com/spine", "bench.example.com/zone"],
            "hyperNodes": "explicit",
            "domains": domains,
        },
        "tenants": tenants,
        # The multi-node models request RDMA: its IPC_LOCK needs `privileged`, and the device a quota.
        "tenantPolicy": {"default": {"podSecurity": "privileged", "maxCapability": {"rdma/hca": 100_000}}},
        "modelDefaults": {
            "image": "vllm/vllm-openai:v0.33.0",
            "priorityClass": "p2-normal",
            "shmSizeGi": 8,
            "source": {"pvc": {"claimName": "models"}, "mountPath": "/models"},
            "env": {"NCCL_SOCKET_IFNAME": "net1"},
        },
        "models": models,
    }


def stack_file(size: Size, raw: dict[str, Any]) -> StackFile:
    return StackFile(
        stack=f"bench-{size.name}",
        path=None,
        raw=raw,
        pulumi_config={f"volcano-platform:{k}": json.dumps(v) for k, v in raw.items()},
    )
