"""Pods that arrive once the cluster has settled: a LeaderWorkerSet group made again after it lost a
pod (`ClusterState.restarting_groups`, what `whatif --lose` leaves). LWS makes the group's pods only
once the rest of it has gone, and the scheduler runs every second meanwhile with the group's
PodGroup as it was; the first session without its pods sets it Pending (`getPodGroupPhase`). So a
model waiting for the room the group held is placed first, and the group, back, must be admitted
again. Both engines hold the group back and agree; made again at once, as the what-if did before,
the group wins the room, which is not what the real cluster did (`docs/decisions.md`, "Losing
hardware on the real cluster").
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from live.cluster_state import state_from_objects
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.volcano.differential import Result, model_result, volcano_case, volcano_results
from whatif.volcano.runner import run_cases

GROUP = ("team", "big", "0")
CONF = {
    "actions": "enqueue, allocate, preempt, reclaim, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}, {"name": "capacity"}]},
        {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "nodeorder"}, {"name": "binpack"}]},
    ],
}


def _objects(big_phase: str) -> list[dict[str, Any]]:
    """Three nodes of 2 GPUs; queue `team` may hold 4. `big` (a LeaderWorkerSet group of two 2-GPU
    pods, priority 1000) is being made again; `small` (one 2-GPU pod, priority 10) waits."""
    gpus = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "2"}
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": gpus}}
        for i in (1, 2, 3)
    ]
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in (("high", 1000), ("low", 10))
    ]
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "team"},
        "spec": {"weight": 1, "capability": {"nvidia.com/gpu": "4"}, "reclaimable": True},
        "status": {"state": "Open"},
    }

    def group(name: str, size: int, priority: str, phase: str) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "team"},
            "spec": {
                "minMember": size,
                "queue": "team",
                "priorityClassName": priority,
                "minResources": {"nvidia.com/gpu": str(2 * size), "cpu": str(size), "memory": f"{size}Gi"},
            },
            "status": {"phase": phase},
        }

    def pod(name: str, group_name: str, priority: str, labels: dict[str, str]) -> dict[str, Any]:
        request = {"nvidia.com/gpu": "2", "cpu": "1", "memory": "1Gi"}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "team",
                "uid": name,
                "labels": labels,
                "annotations": {"scheduling.k8s.io/group-name": group_name},
            },
            "spec": {
                "schedulerName": "volcano",
                "priorityClassName": priority,
                "priority": 1000 if priority == "high" else 10,
                "containers": [{"name": "c", "resources": {"requests": request, "limits": request}}],
            },
            "status": {"phase": "Pending"},
        }

    lws = {"leaderworkerset.sigs.k8s.io/name": "big", "leaderworkerset.sigs.k8s.io/group-index": "0"}
    return [
        *nodes,
        *classes,
        queue,
        group("big", 2, "high", big_phase),
        group("small", 1, "low", "Pending"),
        pod("small-0", "small", "low", {}),
        pod("big-0", "big", "high", lws),
        pod("big-0-1", "big", "high", {**lws, "leaderworkerset.sigs.k8s.io/worker-index": "1"}),
    ]


def _answers(objects: list[dict[str, Any]], restarting: set[tuple[str, str, str]]) -> tuple[Result, list[Result]]:
    state = replace(state_from_objects(objects, "arrivals"), restarting_groups=restarting)
    model = model_result(objects, CONF, state)
    arriving = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("big") and restarting]
    kept = [o for o in objects if o not in arriving]
    case = {**volcano_case("arrivals", kept, CONF, 4), "arrivals": arriving}
    return model, volcano_results(objects, run_cases([case], binary=volcano_engine())[0])


def test_a_group_made_again_arrives_after_the_waiting_model_has_taken_its_room() -> None:
    # as the what-if made it before: the group's PodGroup Pending again, its pods back at once
    at_once, volcano_at_once = _answers(_objects("Pending"), set())
    assert at_once in volcano_at_once
    assert at_once.placed == (("team/big", 2), ("team/small", 0)) and at_once.evicted == ()

    # as the cluster does it: the PodGroup as it was (Running) while its pods are gone, then them
    later, volcano_later = _answers(_objects("Running"), {GROUP})
    assert later in volcano_later
    assert later.placed == (("team/big", 0), ("team/small", 1)) and later.evicted == (), later.describe()
