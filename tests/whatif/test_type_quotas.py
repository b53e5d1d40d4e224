"""Quotas per accelerator type hold on the scheduler itself, not only in the stack: in the cloud
example, tenant `search` has an L40S queue and an H100 queue, each kept on its type's node groups by
Volcano's `nodegroup` plugin. Pods of one type's queue that select the other type's nodes (a pod
made by hand, past the platform's own node selectors) never run there, on Volcano's own code and
on the model alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.scheduling.volcano_values import scheduler_conf_text
from live.cluster_state import read_file
from offline.render import render_stack
from tests.conftest import PROJECT_DIR
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.predict import MAX_CYCLES, policy_of, simulate
from whatif.scheduler.engine import open_session
from whatif.volcano.predict import cluster_objects
from whatif.volcano.runner import run_cases
from whatif.workload import build_world

FRESH = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"
NODE_GROUP = "volcano.sh/nodegroup-name"


def _world(queue: str, group: str) -> tuple[Any, ...]:
    """The cloud example after `pulumi up`, with bge-m3's pods moved to `queue` and selecting the
    nodes of `group`."""
    result = render_stack(PROJECT_DIR, "aicloud-eks")
    state = read_file(FRESH)
    session, models, objects = build_world(state, result.spec, result.rendered)
    jobs, tasks = set(models["bge-m3"].jobs), set(models["bge-m3"].tasks)
    for uid in jobs:
        objects.pod_groups[uid]["spec"]["queue"] = queue
        session.jobs[uid].queue = queue
    for uid in tasks:
        pod = objects.pods[uid]
        pod["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = queue
        pod["spec"]["nodeSelector"] = {NODE_GROUP: group}
        task = next(t for j in jobs for t in session.jobs[j].tasks if t.uid == uid)
        task.node_selector = {NODE_GROUP: group}
    return result, state, session, models, objects, tasks


def _groups_used_by_volcano(queue: str, group: str) -> list[str]:
    volcano_engine()
    result, state, _, _, objects, tasks = _world(queue, group)
    case = {
        "id": "type-quota",
        "conf": scheduler_conf_text(result.spec),
        "defaults": True,
        "objects": cluster_objects(state, result.spec, result.rendered, objects),
        "cycles": MAX_CYCLES,
        "repeat": 1,
    }
    outcome = max(run_cases([case])[0]["outcomes"], key=lambda o: o["runs"])
    node_group = {n["metadata"]["name"]: n["metadata"]["labels"].get(NODE_GROUP) for n in state.nodes}
    return sorted({node_group[node] for uid, node in outcome["pods"].items() if uid in tasks and node})


def _groups_used_by_the_model(queue: str, group: str) -> list[str]:
    result, _, session, _, _, tasks = _world(queue, group)
    tiers, actions, configurations = policy_of(result.spec)
    session.configurations = configurations
    open_session(session, tiers)
    simulate(session, tiers, actions)
    placed = [t for job in session.jobs.values() for t in job.tasks if t.uid in tasks and t.node]
    return sorted({session.nodes[t.node].labels.get(NODE_GROUP) for t in placed})


ENGINES: dict[str, Callable[[str, str], list[str]]] = {
    "volcano": _groups_used_by_volcano,
    "model": _groups_used_by_the_model,
}


@pytest.mark.slow
@pytest.mark.parametrize("engine", list(ENGINES))
def test_an_h100_grant_cannot_be_spent_on_l40s_nor_the_other_way_round(engine: str) -> None:
    used = ENGINES[engine]
    assert used("search-l40s", "l40s") == ["l40s"], "the L40S queue runs on its own type"
    assert used("search-h100", "l40s") == [], "the H100 queue's pods never run on L40S nodes"
    assert used("search-h100", "h100-b") == ["h100-b"], "the H100 queue runs on H100 nodes"
    assert used("search-l40s", "h100-a") == [], "the L40S queue's pods never run on H100 nodes"
