"""Generated what-if scenarios for the real cluster, each a "cell": its own nodes, tenants, queues,
running work and models, so that several run on one cluster at once without touching each other
(each cell's pods select only its nodes, and its queues hold only its work).

Round N is `round_of(N)` (from `random.Random(N)`): twenty cells, a stack before and after the
change, and the work running beside the stack (batch gangs under Deployments, as controllers
recreate evicted pods), cordoned and tainted nodes. `tests/e2e/test_whatif_real.py` sets a round
up for real, records it with `volcano-platform snapshot`, predicts the change with `whatif` (both
engines), applies it with `pulumi up` and compares the prediction with what Volcano's scheduler
did, cell by cell.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from config.platform_labels import MODEL_LABEL

CELLS = 20
NODES_PER_CELL = 6
GPUS_PER_NODE = 4
CELL_LABEL = "whatif.example.com/cell"
LEAF_LABEL = "topology.example.com/leaf"
TAINT_KEY = "whatif.example.com/maintenance"
BATCH = "batch"
"""The namespace of the work running beside the stack."""
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
CLASSES = ("p1-high", "p2-normal", "p3-low")


def cell_nodes() -> list[dict[str, Any]]:
    """Every cell's nodes: two leaves of three nodes each."""
    return [
        {
            "metadata": {
                "name": node_name(cell, n),
                "labels": {
                    "kubernetes.io/hostname": node_name(cell, n),
                    CELL_LABEL: f"c{cell}",
                    LEAF_LABEL: f"c{cell}-l{1 + (n - 1) // 3}",
                },
            },
            "status": {
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(GPUS_PER_NODE)}
            },
        }
        for cell in range(CELLS)
        for n in range(1, NODES_PER_CELL + 1)
    ]


def node_name(cell: int, n: int) -> str:
    return f"c{cell}-n{n}"


@dataclass
class Gang:
    """A batch gang: a PodGroup and a Deployment of its pods."""

    name: str
    queue: str
    pods: int
    gpus: int
    priority_class: str
    preemptable: bool


@dataclass
class Cell:
    index: int
    tenant: str
    """The tenant whose models the cell runs (its queue has the same name)."""
    tenants: dict[str, Any]
    before: dict[str, Any]
    """Models running before the change."""
    after: dict[str, Any]
    """Models after the change (the before models among them, some changed)."""
    batch_queues: list[dict[str, Any]] = field(default_factory=list)
    gangs: list[Gang] = field(default_factory=list)
    cordoned: list[str] = field(default_factory=list)
    tainted: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"c{self.index}"


def _model(cell: int, name: str, rng: random.Random, tenant: str, cap: int) -> dict[str, Any]:
    """A model that alone fits its queue's capability `cap` (the offline checks refuse one that cannot)."""
    multi = rng.random() < 0.3
    model: dict[str, Any] = {
        "tenant": tenant,
        "image": "vllm/vllm-openai:v0.33.0",
        "source": {"hub": {"id": "Qwen/Qwen3-0.6B"}},
        "servedModelName": name,
        "serviceName": f"{name}-api",
        "priorityClass": rng.choice(CLASSES),
        "nodeSelector": {CELL_LABEL: f"c{cell}"},
    }
    if multi:
        model.update(
            nodesPerReplica=2,
            replicas=1,
            resources={"gpus": GPUS_PER_NODE, "cpu": 8, "memory": "32Gi"},
            engine={"tensorParallelSize": GPUS_PER_NODE, "pipelineParallelSize": 2},
            topology={"mode": "hard", "highestTier": 1},
        )
    else:
        gpus = rng.choice((1, 2, 4))
        model.update(
            replicas=rng.randint(1, max(1, min(4, cap // gpus))),
            resources={"gpus": gpus, "cpu": 4, "memory": "16Gi"},
            engine={"maxModelLen": 8192, "tensorParallelSize": gpus},
        )
    return model


def _cell(index: int, rng: random.Random, number: int) -> Cell:
    # Tenants are named per round: Volcano's queue webhook checks a parent's new shares against its
    # children as they are, so reshaping one family of queues in one `up` can be refused (a case
    # for two steps; `docs/operations.md`, "Reshaping queues"). A round starts from new queues.
    tenant = f"r{number}t{index}"
    capability = rng.choice((8, 12, 16, 24))
    queue: dict[str, Any] = {
        "capability": {"nvidia.com/gpu": capability},
        "deserved": {"nvidia.com/gpu": rng.choice([d for d in (4, 8, 12) if d <= capability])},
        "reclaimable": rng.random() < 0.5,
    }
    tenants: dict[str, Any] = {}
    if rng.random() < 0.3:  # a parent queue above the tenant's
        parent_cap = rng.choice([c for c in (8, 12, 16, 24) if c >= queue["deserved"]["nvidia.com/gpu"]])
        queue["capability"] = {"nvidia.com/gpu": min(capability, parent_cap)}
        tenants[f"r{number}o{index}"] = {
            "namespaces": [],
            "queue": {"capability": {"nvidia.com/gpu": parent_cap}, "deserved": queue["deserved"]},
        }
        queue["parent"] = f"r{number}o{index}"
    tenants[tenant] = {"queue": queue}
    cap = queue["capability"]["nvidia.com/gpu"]
    before = {f"m{index}z": _model(index, f"m{index}z", rng, tenant, cap)} if rng.random() < 0.4 else {}
    for model in before.values():  # running before: small and low, so it is placed first
        model.update(
            priorityClass="p3-low",
            replicas=1,
            nodesPerReplica=1,
            resources={"gpus": 1, "cpu": 4, "memory": "16Gi"},
            engine={"maxModelLen": 8192, "tensorParallelSize": 1},
        )
        model.pop("topology", None)
    after = {name: dict(model) for name, model in before.items()}
    for letter in "abc"[: rng.randint(1, 3)]:
        after[f"m{index}{letter}"] = _model(index, f"m{index}{letter}", rng, tenant, cap)
    cell = Cell(index, tenant, tenants, before, after)
    if rng.random() < 0.5:
        cell.batch_queues.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": f"b{index}"},
                "spec": {
                    "weight": 1,
                    "reclaimable": rng.random() < 0.7,
                    "capability": {"nvidia.com/gpu": str(rng.choice((8, 16, 24)))},
                    "deserved": {"nvidia.com/gpu": str(rng.choice((0, 4, 8)))},
                },
            }
        )
    queues = [tenant] + [q["metadata"]["name"] for q in cell.batch_queues]
    for number in range(rng.randint(0, 3)):
        cell.gangs.append(
            Gang(
                name=f"g{index}-{number}",
                queue=rng.choice(queues),
                pods=rng.randint(1, 3),
                gpus=rng.choice((1, 2, 4)),
                priority_class=rng.choice(CLASSES),
                preemptable=rng.random() < 0.8,
            )
        )
    nodes = [node_name(index, n) for n in range(1, NODES_PER_CELL + 1)]
    roll = rng.random()
    if roll < 0.25:
        cell.cordoned.append(rng.choice(nodes))
    elif roll < 0.5:
        cell.tainted.append(rng.choice(nodes))
    return cell


def round_of(number: int) -> list[Cell]:
    """Round `number`, the same on every run."""
    rng = random.Random(number)
    return [_cell(index, rng, number) for index in range(CELLS)]


def stack_changes(cells: list[Cell], after: bool) -> dict[str, Any]:
    """The stack keys a round sets: the cells' nodes as the topology, their tenants and models."""
    domains = {
        f"c{cell.index}-l{leaf}": {"nodes": [f"c{cell.index}-n[{3 * leaf - 2}-{3 * leaf}]"]}
        for cell in cells
        for leaf in (1, 2)
    }
    tenants: dict[str, Any] = {}
    models: dict[str, Any] = {}
    for cell in cells:
        tenants.update(cell.tenants)
        models.update(cell.after if after else cell.before)
    return {
        "topology": {"tiers": [LEAF_LABEL], "hyperNodes": "explicit", "domains": domains},
        "tenants": tenants,
        "models": models,
    }


def gang_objects(gang: Gang, cell: int) -> list[dict[str, Any]]:
    """The PodGroup and the Deployment of a batch gang (its controller recreates evicted pods)."""
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gang.gpus)}
    annotations = {GROUP_ANNOTATION: gang.name}
    if not gang.preemptable:
        annotations["volcano.sh/preemptable"] = "false"
    labels = {"app": gang.name}
    return [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": gang.name, "namespace": BATCH},
            "spec": {
                "minMember": gang.pods,
                "queue": gang.queue,
                "priorityClassName": gang.priority_class,
                "minResources": {"nvidia.com/gpu": str(gang.pods * gang.gpus)},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": gang.name, "namespace": BATCH},
            "spec": {
                "replicas": gang.pods,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels, "annotations": annotations},
                    "spec": {
                        "schedulerName": "volcano",
                        "priorityClassName": gang.priority_class,
                        "nodeSelector": {CELL_LABEL: f"c{cell}"},
                        "terminationGracePeriodSeconds": 0,
                        "containers": [
                            {
                                "name": "work",
                                "image": "busybox",
                                "resources": {"requests": requests, "limits": requests},
                            }
                        ],
                    },
                },
            },
        },
    ]


def bound_pods(model: dict[str, Any], name: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether every pod of a model is bound, among `pods` (those being deleted left out)."""
    live = [
        p
        for p in pods
        if (p["metadata"].get("labels") or {}).get(MODEL_LABEL) == name and not p["metadata"].get("deletionTimestamp")
    ]
    want = model["replicas"] * model.get("nodesPerReplica", 1)
    bound = sum(1 for p in live if p["spec"].get("nodeName"))
    return {"runs": bound >= want, "bound": bound, "want": want}


def in_stack_order(predicted: dict[str, Any]) -> bool:
    """Whether a model of `predicted_cells` runs when `up` creates the change's models one at a time
    in the stack's order (its row's `inOrder`, where that differs from the verdict)."""
    in_order = predicted["row"].get("inOrder")
    return predicted["runs"] if in_order is None else bool(in_order)


def predicted_cells(answer: dict[str, Any], cells: list[Cell]) -> dict[str, dict[str, Any]]:
    """A `whatif --json` answer (with or without `--lose`) per model of the cells (whether it runs,
    and its row) and per cell the (queue, priority) of each victim; where a `--lose` answer gives
    a model an `otherwise` (LeaderWorkerSet groups made again race with the work waiting for their
    room), the cell's other outcome as `otherwise`: each model's runs and the cell's victims."""
    rows = {m["model"]: m for m in answer["models"]}
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        victims, other_victims, other_runs = [], [], {}
        for name in cell.after:
            row = rows[name]
            out[name] = {"runs": row["verdict"] in ("fits", "fits-after-eviction"), "row": row}
            victims += [(v["queue"], v["priority"]) for v in row["victims"]]
            alternative = row.get("otherwise") or row
            other_runs[name] = alternative["verdict"] in ("fits", "fits-after-eviction")
            other_victims += [(v["queue"], v["priority"]) for v in alternative["victims"]]
        out[cell.name] = {"victims": sorted(victims)}
        if any(rows[name].get("otherwise") for name in cell.after):
            out[cell.name]["otherwise"] = {"runs": other_runs, "victims": sorted(other_victims)}
    return out
