"""Waiting for nodes, apart from waiting for quota: what an autoscaled pool's growth would change.

A gang that does not fit the nodes there are may fit once the pool's autoscaler adds nodes, up to
the pool's `maxNodes`. For each model that waits (or never runs) on a pool that may still grow, the
prediction is made again on the cluster with the pool grown: to its maximum first (does growth help
at all?), then by the fewest nodes that let the model run. New nodes are copies of one of the
pool's nodes (or made from the pool's declaration), in tier-1 domains of their own of the pool's
`nodesPerDomain`, the way a capacity reservation adds instances under its own network nodes.

Whether an autoscaler really adds the nodes is its decision, not the scheduler's: the docs
(`docs/operations.md`, "Gangs on autoscaled pools") say what Cluster Autoscaler and Karpenter do
with a pending gang.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from config.spec.platform import PlatformSpec
from config.spec.pools import Pool
from live.cluster_state import ClusterState
from offline.manifests import Rendered
from whatif.predict import NEVER, WAITS, Prediction, Verdict

Predictor = Callable[[ClusterState, PlatformSpec, Rendered], Prediction]


def _members(pool: Pool, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    selector = pool.config.selector
    return [
        n
        for n in nodes
        if all(((n.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in selector.items())
    ]


def _template(pool: Pool, spec: PlatformSpec, members: list[dict[str, Any]]) -> dict[str, Any]:
    if members:
        return members[0]
    node = spec.config.cluster.node
    allocatable = {pool.resource: str(pool.gpus_per_node), "pods": "110"}
    allocatable["cpu"] = str(node.cpu) if node.cpu is not None else "192"
    allocatable["memory"] = str(node.memory) if node.memory is not None else "2000Gi"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "", "labels": dict(pool.labels)},
        "spec": {"taints": [dict(t) for t in pool.taints]} if pool.taints else {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def grown(state: ClusterState, spec: PlatformSpec, pool_name: str, extra: int) -> ClusterState:
    """The cluster with `extra` more nodes in the pool."""
    pool = spec.pools[pool_name]
    template = _template(pool, spec, _members(pool, state.nodes))
    tiers = spec.topology.tiers if spec.topology is not None and pool.config.topology is not None else ()
    per_leaf = (pool.config.topology.nodes_per_domain if pool.config.topology else None) or 1
    added = []
    for index in range(extra):
        node = copy.deepcopy(template)
        name = f"{pool_name}-grown-{index + 1}"
        node["metadata"] = {**node["metadata"], "name": name, "labels": dict(node["metadata"].get("labels") or {})}
        node["metadata"].pop("uid", None)
        labels = node["metadata"]["labels"]
        labels["kubernetes.io/hostname"] = name
        if tiers:
            labels[tiers[0]] = f"{pool_name}-grown-{index // per_leaf + 1}"
        added.append(node)
    return dataclasses.replace(state, nodes=[*state.nodes, *added])


def _room(state: ClusterState, spec: PlatformSpec, pool_name: str) -> tuple[int, int]:
    """(Nodes the pool has now, nodes it may still add)."""
    pool = spec.pools[pool_name]
    have = len(_members(pool, state.nodes))
    limit = pool.config.max_nodes or 0
    return have, max(limit - have, 0)


def with_pool_growth(
    prediction: Prediction, state: ClusterState, spec: PlatformSpec, rendered: Rendered, predict: Predictor
) -> Prediction:
    """The prediction with each waiting model on an autoscaled pool told apart: waits for nodes
    (and how many), never (beyond the pool's maximum), or waits for something growth does not
    change (quota, other work)."""
    verdicts = []
    for verdict in prediction.verdicts:
        model = spec.models.get(verdict.model)
        scaled = [p for p in (model.pools or ()) if spec.pools[p].config.autoscaled] if model is not None else []
        if verdict.verdict not in (WAITS, NEVER) or not scaled:
            verdicts.append(verdict)
            continue
        verdicts.append(_told_apart(verdict, scaled, state, spec, rendered, predict))
    return dataclasses.replace(prediction, verdicts=verdicts)


def _runs(prediction: Prediction, model: str) -> bool:
    return next(v for v in prediction.verdicts if v.model == model).verdict not in (WAITS, NEVER)


def _told_apart(
    verdict: Verdict, pools: list[str], state: ClusterState, spec: PlatformSpec, rendered: Rendered, predict: Predictor
) -> Verdict:
    name = verdict.model
    for pool in pools:
        have, room = _room(state, spec, pool)
        if room == 0:
            continue
        if not _runs(predict(grown(state, spec, pool, room), spec, rendered), name):
            continue
        low, high = 1, room  # the fewest nodes that let it run: it runs with `high`
        while low < high:
            middle = (low + high) // 2
            if _runs(predict(grown(state, spec, pool, middle), spec, rendered), name):
                high = middle
            else:
                low = middle + 1
        limit = spec.pools[pool].config.max_nodes
        return dataclasses.replace(
            verdict,
            verdict=WAITS,
            reason=f"waits for nodes: fits once pool `{pool}` grows by {high} node(s) (it has {have}, at most "
            f"{limit}), if its autoscaler adds them for a pending gang (`pools.{pool}.maxNodes`)",
        )
    limits = ", ".join(f"`{p}` at {spec.pools[p].config.max_nodes} node(s)" for p in pools)
    if verdict.verdict == NEVER:
        return dataclasses.replace(
            verdict, reason=f"never: more than its pools hold at their maximum ({limits}); {verdict.reason}"
        )
    what = "quota" if verdict.key.startswith("tenants.") else "room that growth does not give"
    return dataclasses.replace(
        verdict,
        reason=f"waits for {what}, not nodes: its pools at their maximum ({limits}) do not change it; {verdict.reason}",
    )
