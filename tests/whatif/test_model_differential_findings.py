"""Differences the differential found between the model and Volcano v1.15.1's own code, fixed in
the model, each as a scenario whose outcome Volcano's code gives too
(`test_volcano_agrees_on_every_scenario`) and the model gave wrong before:

- the network-topology-aware plugin's node score: a pod without topology prefers the nodes of the
  fuller HyperNodes (`network_topology_aware.go` `batchNodeOrderFnForNormalPods`);
- reclaim tries nodes in the session's order, unscored (`reclaim.go` `reclaimForTask` walks
  `PredicateNodes`' result), where preempt sorts them by score;
- a scalar resource the queues' guarantees take whole drops out of `ExceededPart`, so it caps no
  other queue's deserved (`api/resource_info.go` `Diff`, `proportion.go` `realCapability`);
- with no plugin ordering two jobs, the earlier created and then the smaller UID (namespace/name)
  goes first, whatever order a dump lists them in (`framework/session_plugins.go` `JobOrderFn`).

The generated clusters the differential first differed on are kept too, by number
(`FIXED_CLUSTERS`), and must agree with Volcano's code.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from live.cluster_state import state_from_objects
from tests.whatif.clusters import build, policy_conf
from tests.whatif.test_model_upstream_scores import NTA_ARGUMENTS, binds, holding, running
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.scenario import session_of
from whatif.scheduler.engine import open_session, run_cycle
from whatif.snapshot import snapshot_session
from whatif.volcano.differential import model_result, volcano_case, volcano_results
from whatif.volcano.objects import scenario_case
from whatif.volcano.runner import run_cases

GPU_NODE = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"}


def scenario(
    actions: list[str],
    plugins: list[dict[str, Any]],
    nodes: list[str],
    queues: list[dict[str, Any]],
    pod_groups: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    hypernodes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "policy": {"actions": actions, "tiers": [[{"name": "gang"}, {"name": "predicates"}, *plugins]]},
        "queues": [{"weight": 1, "state": "Open", **q} for q in queues],
        "nodes": [{"name": n, "allocatable": dict(GPU_NODE)} for n in nodes],
        "hyperNodes": hypernodes or [],
        "podGroups": [{"namespace": "ns", "phase": "Inqueue", **pg} for pg in pod_groups],
        "pods": [{"namespace": "ns", "phase": "Pending", **pod} for pod in pods],
    }


def fuller_hypernode() -> dict[str, Any]:
    """s0 {n1, n2} and s1 {n3, n4}; n4 is full. A one-GPU pod with no topology: by name n1 comes
    first, but the HyperNode binpack of s1 (5 of 8 GPUs with the pod) beats s0's (1 of 8)."""
    return scenario(
        ["enqueue", "allocate"],
        [{"name": "network-topology-aware", "arguments": dict(NTA_ARGUMENTS)}],
        ["n1", "n2", "n3", "n4"],
        [{"name": "q1"}],
        [
            {"name": "run", "queue": "q1", "minMember": 1, "phase": "Running"},
            {"name": "pg", "queue": "q1", "minMember": 1},
        ],
        [
            running("r1", "n4", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}),
            {"name": "p1", "group": "pg", "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}},
        ],
        [
            holding("s0", 1, "Node", ["n1", "n2"]),
            holding("s1", 1, "Node", ["n3", "n4"]),
            holding("s2", 2, "HyperNode", ["s0", "s1"]),
        ],
    )


def reclaim_in_node_order() -> dict[str, Any]:
    """Each node runs one pod of q2, over its deserved share; a pod of q1 needs one node's GPUs.
    n2 is emptier, so leastrequested scores it higher and preempt would try it first; reclaim
    takes the victim on n1, the first node it walks."""
    return scenario(
        ["enqueue", "allocate", "reclaim"],
        [{"name": "proportion"}, {"name": "nodeorder"}],
        ["n1", "n2"],
        [{"name": "q1"}, {"name": "q2"}],
        [
            {"name": "victims", "queue": "q2", "minMember": 1, "phase": "Running"},
            {"name": "pg", "queue": "q1", "minMember": 1},
        ],
        [
            running("v1", "n1", {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}, "victims"),
            running("v2", "n2", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}, "victims"),
            {"name": "p1", "group": "pg", "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}},
        ],
    )


def guarantees_take_the_gpus_whole() -> dict[str, Any]:
    """Two GPU nodes (8 GPUs), guaranteed 4 each to q1 and q2, neither of which has work; q3,
    with no guarantee, asks for 2. Total minus guarantees leaves no GPU dimension at all in q3's
    real capability (not a zero), so its deserved is not capped and the pod is placed."""
    return scenario(
        ["enqueue", "allocate"],
        [{"name": "proportion"}],
        ["n1", "n2"],
        [
            {"name": "q1", "guarantee": {"nvidia.com/gpu": "4"}},
            {"name": "q2", "guarantee": {"nvidia.com/gpu": "4"}},
            {"name": "q3"},
        ],
        [{"name": "pg", "queue": "q3", "minMember": 1}],
        [{"name": "p1", "group": "pg", "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}}],
    )


SCENARIOS = {
    "fuller-hypernode": (fuller_hypernode, {"ns/p1": "n3"}),
    "guarantees-take-the-gpus-whole": (guarantees_take_the_gpus_whole, {"ns/p1": "n1"}),
}
EVICTIONS = {"reclaim-in-node-order": (reclaim_in_node_order, ["ns/v1"])}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_model_places_as_volcano_does(name: str) -> None:
    build_case, expected = SCENARIOS[name]
    assert binds(build_case()) == expected


def test_reclaim_walks_the_nodes_in_order_not_by_score() -> None:
    case = reclaim_in_node_order()
    session = session_of(case)
    open_session(session, case["policy"]["tiers"])
    run_cycle(session, tuple(case["policy"]["actions"]))
    assert session.evictions == ["ns/v1"]


def test_jobs_no_plugin_orders_go_by_creation_then_uid() -> None:
    """A dump lists job-8 before job-11; with no creation times job-11 (the smaller UID) goes
    first, and with job-8 created earlier job-8 does."""

    def pod_group(name: str, created: str | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": "ns"}
        if created:
            metadata["creationTimestamp"] = created
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": metadata,
            "spec": {"queue": "q", "minMember": 1},
        }

    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }
    unstamped = snapshot_session(state_from_objects([queue, pod_group("job-8"), pod_group("job-11")], "t"))
    assert sorted(unstamped.jobs, key=lambda uid: unstamped.jobs[uid].order) == ["ns/job-11", "ns/job-8"]
    stamped = snapshot_session(
        state_from_objects(
            [queue, pod_group("job-8", "2026-01-01T00:00:00Z"), pod_group("job-11", "2026-01-02T00:00:00Z")], "t"
        )
    )
    assert sorted(stamped.jobs, key=lambda uid: stamped.jobs[uid].order) == ["ns/job-8", "ns/job-11"]


FIXED_CLUSTERS = {
    "the network-topology-aware node score": [320, 766, 853, 971],
    "job order by creation time and UID": [55, 89, 96, 215],
    "reclaim's node order, a failed pod's HyperNode span cleared": [220, 232, 262, 356],
    "pods of a job only pipelined return Pending": [67, 651, 1532, 1631],
    "a guaranteed-away scalar caps nothing": [429],
    "gang eviction's bundle order": [72, 465, 615, 1238],
}
"""Generated clusters (`tests/whatif/clusters.py`, by seed) where the model differed from every
outcome of Volcano's code before the fix named."""


RETRY_REPEAT = 64
"""Volcano's code ends some clusters differently from run to run: cluster 1238 evicts one pod in
one run of four or five (the model's outcome) and more pods in the others, so eight runs miss the
model's outcome about one time in six. A cluster missed is run this often again before it counts."""


@pytest.fixture(scope="module")
def engine() -> Path:
    return volcano_engine()


@pytest.mark.slow
def test_volcano_agrees_on_every_scenario(engine: Path) -> None:
    names = sorted(SCENARIOS) + sorted(EVICTIONS)
    cases = {**{n: SCENARIOS[n][0]() for n in SCENARIOS}, **{n: EVICTIONS[n][0]() for n in EVICTIONS}}
    answers = run_cases([scenario_case(n, cases[n], repeat=16, defaults=True) for n in names], binary=engine)
    for name, answer in zip(names, answers, strict=True):
        assert not answer.get("error"), answer
        cycles = [outcome["cycles"][0] for outcome in answer["outcomes"]]
        if name in SCENARIOS:  # n1 and n2 tie when both are empty: each is one of Volcano's outcomes
            assert SCENARIOS[name][1] in [cycle["binds"] for cycle in cycles], name
        else:
            # Reclaim walks the nodes in the order its parallel predicate finishes them (16 workers,
            # `PredicateNodes`, pkg/scheduler/util/predicate_helper.go): node order when the workers
            # keep pace, which a loaded machine does not promise; the model's victim is one outcome.
            assert EVICTIONS[name][1] in [sorted(cycle["evictions"]) for cycle in cycles], name


@pytest.mark.slow
def test_the_clusters_the_model_missed_now_agree(engine: Path) -> None:
    seeds = sorted(seed for found in FIXED_CLUSTERS.values() for seed in found)
    built = [build(random.Random(seed)) for seed in seeds]
    confs = [policy_conf(policy, hierarchy) for _, policy, hierarchy in built]
    models = [model_result(objects, conf) for (objects, _, _), conf in zip(built, confs, strict=True)]
    cases = [
        volcano_case(str(s), objects, conf, 8) for s, (objects, _, _), conf in zip(seeds, built, confs, strict=True)
    ]
    answers = run_cases(cases, binary=engine)
    missed = [
        i
        for i, ((objects, _, _), answer) in enumerate(zip(built, answers, strict=True))
        if models[i] not in volcano_results(objects, answer)
    ]
    retried = run_cases([{**cases[i], "repeat": RETRY_REPEAT} for i in missed], binary=engine)
    still = [
        seeds[i]
        for i, answer in zip(missed, retried, strict=True)
        if models[i] not in volcano_results(built[i][0], answer)
    ]
    assert not still, f"the model differs from Volcano's code on clusters {still}"
