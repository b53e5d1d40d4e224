"""Random clusters for the differential test of the model against Volcano's own code.

`build(random.Random(seed))` makes one cluster: Kubernetes objects as a dump holds them (Nodes,
Pods, PodGroups, Queues, HyperNodes, PriorityClasses), the name of one of the scheduler policies
the stack renders and whether its queues form a hierarchy. Sizes follow what the platform meets:
1-64 nodes of uneven shapes, some cordoned, NotReady or tainted; 1-12 jobs of one or several pods, some with
sub-groups the way the platform's multi-node models have them, some running, partly running,
pending or terminating; 1-6 queues, flat or under parents, with deserved, guarantee and capability
per dimension; priority classes with both preemption policies; HyperNode trees 1-3 tiers deep
with hard and soft topology at each tier.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from config.sections.volcano import VolcanoConfig
from config.spec.scheduler_conf import scheduler_conf

GPU = "nvidia.com/gpu"
POLICIES: dict[str, dict[str, Any]] = {
    "pod-eviction-capacity": {"eviction": "pod", "queuePlugin": "capacity"},
    "pod-eviction-proportion": {"eviction": "pod", "queuePlugin": "proportion"},
    "gang-eviction-capacity": {"eviction": "gang", "queuePlugin": "capacity"},
}
SHAPES = (("8", "32Gi", 0), ("16", "64Gi", 4), ("32", "128Gi", 8), ("64", "256Gi", 8))
LWS_NAME, LWS_INDEX = "leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def policy_conf(name: str, hierarchy: bool) -> dict[str, Any]:
    """The conf the stack renders for that eviction style and queue plugin."""
    volcano = VolcanoConfig.model_validate({"scheduler": POLICIES[name]})
    return scheduler_conf(volcano, GPU, hierarchy, multi_node_models=True)


def _quantities(cpu: int, memory_gi: int, gpus: int) -> dict[str, str]:
    out = {"cpu": str(cpu), "memory": f"{memory_gi}Gi"}
    if gpus:
        out[GPU] = str(gpus)
    return out


class _Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.objects: list[dict[str, Any]] = []
        self.free: dict[str, dict[str, float]] = {}
        self.placeable: dict[str, dict[str, Any]] = {}

    def nodes(self) -> list[str]:
        rng = self.rng
        names = []
        for i in range(rng.randint(1, 64) if rng.random() < 0.3 else rng.randint(1, 12)):
            cpu, memory, gpus = rng.choice(SHAPES)
            name = f"node-{i:02d}"
            allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **({GPU: str(gpus)} if gpus else {})}
            roll = rng.random()
            ready = "False" if roll < 0.05 else "True"
            spec: dict[str, Any] = {}
            if 0.05 <= roll < 0.12:
                spec["unschedulable"] = True
            if rng.random() < 0.1:
                spec["taints"] = [dict(TAINT)]
            self.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": rng.choice("ab")}},
                    "spec": spec,
                    "status": {
                        "capacity": allocatable,
                        "allocatable": allocatable,
                        "conditions": [{"type": "Ready", "status": ready}],
                    },
                }
            )
            names.append(name)
            self.free[name] = {"cpu": float(cpu), "memory": float(int(memory[:-2])), GPU: float(gpus)}
            if ready == "True" and not spec:
                self.placeable[name] = spec
        return names

    def hypernodes(self, nodes: list[str]) -> int:
        rng = self.rng
        tiers = rng.choice((0, 1, 2, 3))
        level = list(nodes)
        for tier in range(1, tiers + 1):
            if len(level) <= 1 and tier > 1:
                return tier - 1
            groups: list[list[str]] = []
            rest = list(level)
            while rest:
                size = rng.randint(1, 4 if tier == 1 else 3)
                groups.append(rest[:size])
                rest = rest[size:]
            names = []
            for index, members in enumerate(groups):
                name = f"t{tier}-{index}"
                kind = "Node" if tier == 1 else "HyperNode"
                self.objects.append(
                    {
                        "apiVersion": "topology.volcano.sh/v1alpha1",
                        "kind": "HyperNode",
                        "metadata": {"name": name},
                        "spec": {
                            "tier": tier,
                            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
                        },
                    }
                )
                names.append(name)
            level = names
        return tiers

    def queues(self, hierarchy: bool) -> list[str]:
        rng = self.rng
        leaves = []
        parents: list[str] = []
        if hierarchy:
            self.objects.append(self._queue("root", None, weight=1, limits=False))
            parents = [f"org-{i}" for i in range(rng.randint(0, 2))]
            for parent in parents:
                self.objects.append(self._queue(parent, "root"))
        for i in range(rng.randint(1, 6 - len(parents))):
            name = f"team-{i}"
            above = rng.choice([*parents, "root"]) if hierarchy else None
            self.objects.append(self._queue(name, above))
            leaves.append(name)
        return leaves

    def _queue(self, name: str, parent: str | None, weight: int | None = None, limits: bool = True) -> dict[str, Any]:
        rng = self.rng
        spec: dict[str, Any] = {"weight": weight or rng.randint(1, 4)}
        if parent:
            spec["parent"] = parent
        if limits:
            for key in ("deserved", "capability"):
                if rng.random() < 0.5:
                    spec[key] = self._limit()
            if rng.random() < 0.25:
                spec["guarantee"] = {"resource": self._limit(small=True)}
            if rng.random() < 0.15:
                spec["reclaimable"] = False
            if rng.random() < 0.2:
                spec["priority"] = rng.randint(1, 3)
        state = "Closed" if limits and rng.random() < 0.04 else "Open"
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
            "status": {"state": state},
        }

    def _limit(self, small: bool = False) -> dict[str, str]:
        rng = self.rng
        out = {}
        for dimension, values in (("cpu", (8, 16, 32, 64)), ("memory", (32, 64, 256)), (GPU, (2, 4, 8, 16))):
            if rng.random() < 0.6:
                amount = rng.choice(values[:2] if small else values)
                out[dimension] = f"{amount}Gi" if dimension == "memory" else str(amount)
        return out or {GPU: "4"}

    def priority_classes(self) -> list[tuple[str, int, str]]:
        rng = self.rng
        classes = []
        for i, value in enumerate(sorted(rng.sample((10, 100, 1000, 10000), rng.randint(1, 3)))):
            policy = "Never" if rng.random() < 0.25 else "PreemptLowerPriority"
            classes.append((f"class-{i}", value, policy))
            self.objects.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": f"class-{i}"},
                    "value": value,
                    "preemptionPolicy": policy,
                }
            )
        return classes

    def jobs(self, queues: list[str], classes: list[tuple[str, int, str]], tiers: int, tainted: bool) -> None:
        rng = self.rng
        for j in range(rng.randint(1, 12)):
            name, namespace = f"job-{j}", rng.choice(("ns-a", "ns-b"))
            groups = rng.choice((1, 1, 1, 2, 3))
            size = rng.choice((1, 1, 2, 4))
            pods = groups * size
            priority = rng.choice([*classes, None])
            gpus = rng.choice((0, 1, 2, 4, 8))
            request = _quantities(rng.choice((1, 2, 4, 8)), rng.choice((2, 8, 16, 32)), gpus)
            spec: dict[str, Any] = {
                "queue": rng.choice(queues),
                "minMember": size if groups > 1 else rng.randint(1, pods),
            }
            if priority:
                spec["priorityClassName"] = priority[0]
            topology = None
            if tiers and rng.random() < 0.5:
                topology = {"mode": rng.choice(("hard", "soft")), "highestTierAllowed": rng.randint(1, tiers)}
            if groups > 1:
                subgroup: dict[str, Any] = {
                    "name": "lws-group",
                    "subGroupSize": size,
                    "labelSelector": {"matchLabels": {LWS_NAME: name}},
                    "matchLabelKeys": [LWS_INDEX],
                }
                if topology:
                    subgroup["networkTopology"] = topology
                spec["subGroupPolicy"] = [subgroup]
            elif topology:
                spec["networkTopology"] = topology
            state = rng.choice(("pending", "pending", "running", "partly", "terminating"))
            running = {"pending": 0, "running": pods, "terminating": pods, "partly": rng.randint(1, pods)}[state]
            template = self._template(request, priority, tainted)
            placed = 0
            for p in range(pods):
                node = self._place(request) if p < running else None
                placed += node is not None
                group = p // size if groups > 1 else None
                self.objects.append(self._pod(name, namespace, group, p, template, node, state))
            phase = "Running" if placed >= spec["minMember"] else rng.choice(("Pending", "Inqueue"))
            self.objects.append(
                {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": spec,
                    "status": {"phase": phase},
                }
            )

    def _template(
        self, request: dict[str, str], priority: tuple[str, int, str] | None, tainted: bool
    ) -> dict[str, Any]:
        """The pod spec every pod of a job shares, as one controller template makes them."""
        spec: dict[str, Any] = {
            "schedulerName": "volcano",
            "containers": [{"name": "main", "resources": {"requests": dict(request)}}],
        }
        if priority:
            spec.update({"priorityClassName": priority[0], "priority": priority[1], "preemptionPolicy": priority[2]})
        if tainted and self.rng.random() < 0.5:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
        if self.rng.random() < 0.1:
            spec["nodeSelector"] = {"zone": self.rng.choice("ab")}
        return spec

    def _place(self, request: dict[str, str]) -> str | None:
        need = {"cpu": float(request["cpu"]), "memory": float(request["memory"][:-2]), GPU: float(request.get(GPU, 0))}
        candidates = [n for n in self.placeable if all(self.free[n][k] >= v for k, v in need.items())]
        if not candidates:
            return None
        node = self.rng.choice(candidates)
        for k, v in need.items():
            self.free[node][k] -= v
        return node

    def _pod(
        self,
        job: str,
        namespace: str,
        group: int | None,
        index: int,
        template: dict[str, Any],
        node: str | None,
        state: str,
    ) -> dict[str, Any]:
        labels = {"volcano.sh/job-name": job}
        if group is not None:
            labels.update({LWS_NAME: job, LWS_INDEX: str(group)})
        spec = copy.deepcopy(template)
        metadata: dict[str, Any] = {
            "name": f"{job}-{index}",
            "namespace": namespace,
            "uid": f"{namespace}-{job}-{index}",
            "labels": labels,
            "annotations": {"scheduling.k8s.io/group-name": job},
        }
        status = {"phase": "Pending"}
        if node:
            spec["nodeName"] = node
            status = {"phase": "Running"}
            if state == "terminating" and self.rng.random() < 0.5:
                metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def build(rng: random.Random) -> tuple[list[dict[str, Any]], str, bool]:
    """One cluster: its objects, a policy name and whether queues form a hierarchy."""
    builder = _Builder(rng)
    policy = rng.choice(sorted(POLICIES))
    hierarchy = POLICIES[policy]["queuePlugin"] == "capacity" and rng.random() < 0.4
    nodes = builder.nodes()
    tainted = any((o.get("spec") or {}).get("taints") for o in builder.objects)
    tiers = builder.hypernodes(nodes)
    queues = builder.queues(hierarchy)
    classes = builder.priority_classes()
    builder.jobs(queues, classes, tiers, tainted)
    return builder.objects, policy, hierarchy


def categories(objects: list[dict[str, Any]], policy: str, hierarchy: bool) -> list[str]:
    """What a cluster exercises, for the figures by category."""
    found = [policy, "hierarchical queues" if hierarchy else "flat queues"]
    kinds: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        kinds.setdefault(obj["kind"], []).append(obj)
    tiers = {h["spec"]["tier"] for h in kinds.get("HyperNode", [])}
    found.append(f"HyperNode tiers {max(tiers)}" if tiers else "no HyperNodes")
    groups = kinds.get("PodGroup", [])
    if any(g["spec"].get("subGroupPolicy") for g in groups):
        found.append("sub-groups")
    if any((g["spec"].get("networkTopology") or {}).get("mode") == "hard" for g in groups):
        found.append("hard topology")
    nodes = kinds.get("Node", [])
    if any(n["spec"].get("unschedulable") for n in nodes):
        found.append("cordoned nodes")
    if any(n["status"]["conditions"][0]["status"] == "False" for n in nodes):
        found.append("NotReady nodes")
    if any(n["spec"].get("taints") for n in nodes):
        found.append("taints")
    pods = kinds.get("Pod", [])
    if any(p["metadata"].get("deletionTimestamp") for p in pods):
        found.append("terminating pods")
    if any(p["spec"].get("preemptionPolicy") == "Never" for p in pods):
        found.append("preemptionPolicy Never")
    return found
