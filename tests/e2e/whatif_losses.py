"""Hardware losses for `whatif --lose` on the real cluster: one loss per cell of a round
(`whatif_cells.py`), chosen from where the scheduler placed the cell's work, so that each cell is
its own scenario (a node under a model, a leaf under a hard-topology gang, GPUs of a tenant with a
guarantee, two nodes under a model and a batch gang), and what the cluster does after it is
compared with the prediction."""

from __future__ import annotations

from collections import Counter
from typing import Any

from config.platform_labels import MODEL_LABEL
from tests.e2e.whatif_cells import BATCH, CELL_LABEL, GPUS_PER_NODE, LEAF_LABEL, Cell, bound_pods, node_name

KINDS = ("node", "domain", "gpus", "nodes")


def prepared(cells: list[Cell]) -> list[Cell]:
    """The cells as the loss round runs them: a cell whose loss takes GPUs gives its tenant a
    guarantee (its deserved share) where the tenant has no parent queue (a parent would need one
    too); in a cell whose loss is one node, the first model of several single-node replicas is
    spread across nodes as a requirement or not at all, in turn."""
    turn = 0
    for cell in cells:
        kind = KINDS[cell.index % len(KINDS)]
        queue = cell.tenants[cell.tenant]["queue"]
        if kind == "gpus" and "parent" not in queue:
            queue["guarantee"] = dict(queue["deserved"])
        candidates = [m for m in cell.after.values() if m.get("nodesPerReplica", 1) == 1 and m["replicas"] > 1]
        if kind == "node" and candidates:
            candidates[0]["spread"] = {"across": "node", "required": True} if turn % 2 == 0 else {"across": "none"}
            turn += 1
    return cells


def spread_apart(cells: list[Cell], pods: list[dict[str, Any]]) -> dict[str, bool]:
    """Per model spread as a requirement whose replicas are all bound: whether each is on its own node."""
    out = {}
    for cell in cells:
        for name, model in cell.after.items():
            if model.get("spread", {}).get("required"):
                nodes = [
                    p["spec"].get("nodeName")
                    for p in pods
                    if (p["metadata"].get("labels") or {}).get(MODEL_LABEL) == name
                ]
                if nodes and all(nodes):
                    out[name] = len(set(nodes)) == len(nodes)
    return out


def _cell_of(pod: dict[str, Any]) -> str:
    return str(((pod.get("spec") or {}).get("nodeSelector") or {}).get(CELL_LABEL, ""))


def losses(cells: list[Cell], pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> dict[str, str]:
    """Cell -> its `--lose` argument, from the pods as the scheduler placed them."""
    leaf = {n["metadata"]["name"]: n["metadata"]["labels"][LEAF_LABEL] for n in nodes}
    out: dict[str, str] = {}
    for cell in cells:
        bound = [p for p in pods if _cell_of(p) == cell.name and p["spec"].get("nodeName")]
        models = Counter(p["spec"]["nodeName"] for p in bound if MODEL_LABEL in (p["metadata"].get("labels") or {}))
        anything = Counter(p["spec"]["nodeName"] for p in bound)
        busiest = (models or anything or Counter({node_name(cell.index, 1): 1})).most_common(1)[0][0]
        kind = KINDS[cell.index % len(KINDS)]
        if kind == "node":
            out[cell.name] = f"node={busiest}"
        elif kind == "domain":
            out[cell.name] = f"domain={leaf[busiest]}"
        elif kind == "gpus":
            out[cell.name] = f"gpus={GPUS_PER_NODE // 2}@{busiest}"
        else:
            gang = Counter(p["spec"]["nodeName"] for p in bound if p["metadata"]["namespace"] == BATCH)
            other = next((n for n, _ in gang.most_common() if n != busiest), None)
            other = other or next(node_name(cell.index, n) for n in range(1, 7) if node_name(cell.index, n) != busiest)
            out[cell.name] = f"node={busiest},{other}"
    return out


def lost_nodes(loss: str, nodes: list[dict[str, Any]]) -> list[str]:
    kind, _, value = loss.partition("=")
    if kind == "node":
        return value.split(",")
    if kind == "domain":
        return [n["metadata"]["name"] for n in nodes if n["metadata"]["labels"][LEAF_LABEL] == value]
    return []


def lost_gpus(loss: str) -> tuple[str, int] | None:
    kind, _, value = loss.partition("=")
    if kind != "gpus":
        return None
    count, _, node = value.partition("@")
    return node, int(count)


def _lws_group(pod: dict[str, Any]) -> tuple[str, str] | None:
    labels = pod["metadata"].get("labels") or {}
    name = labels.get("leaderworkerset.sigs.k8s.io/name")
    index = labels.get("leaderworkerset.sigs.k8s.io/group-index")
    return (name, index) if name and index is not None else None


def observed(
    cells: list[Cell],
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    priorities: dict[str, int],
    gone: set[str],
) -> dict[str, dict[str, Any]]:
    """Per model whether all its pods are bound after the loss; per cell the (queue, priority) of
    each PodGroup that lost a pod to eviction: not one that was on a lost node, nor one of a
    LeaderWorkerSet group made again because the loss took one of its pods."""
    alive = {p["metadata"]["uid"] for p in after if not p["metadata"].get("deletionTimestamp")}
    restarted = {_lws_group(p) for p in before if p["spec"].get("nodeName") in gone} - {None}

    def evicted(pods: list[dict[str, Any]]) -> bool:
        return any(
            p["metadata"]["uid"] not in alive
            and p["spec"].get("nodeName") not in gone
            and _lws_group(p) not in restarted
            for p in pods
        )

    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        victims: list[tuple[str, int]] = []
        for gang in cell.gangs:
            pods = [p for p in before if (p["metadata"].get("labels") or {}).get("app") == gang.name]
            if not any(p["spec"].get("nodeName") in gone for p in pods) and evicted(pods):
                victims.append((gang.queue, priorities[gang.priority_class]))
        for name, model in cell.after.items():
            was = [p for p in before if (p["metadata"].get("labels") or {}).get(MODEL_LABEL) == name]
            if evicted(was):
                victims.append((cell.tenant, priorities[model["priorityClass"]]))
            out[name] = bound_pods(model, name, after)
        out[cell.name] = {"victims": sorted(victims)}
    return out


def agrees(cell: Cell, predicted: dict[str, Any], observed: dict[str, Any]) -> bool:
    """Each model runs or not as predicted, and the same PodGroups (by queue and priority) lost pods
    to eviction; where the answer races (`otherwise`), as one of its two outcomes."""
    outcomes = [({m: predicted[m]["runs"] for m in cell.after}, predicted[cell.name]["victims"])]
    if "otherwise" in predicted[cell.name]:
        other = predicted[cell.name]["otherwise"]
        outcomes.append((other["runs"], other["victims"]))
    seen_victims = Counter(map(tuple, observed[cell.name]["victims"]))
    return any(
        all(runs[m] == observed[m]["runs"] for m in cell.after) and Counter(map(tuple, victims)) == seen_victims
        for runs, victims in outcomes
    )
