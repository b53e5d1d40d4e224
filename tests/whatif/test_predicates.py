"""The model's node predicates where Kubernetes' own plugins decide (Volcano's predicates plugin
runs them): a cordoned node is refused unless the pod tolerates the cordon's taint
(pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go and its test)."""

from __future__ import annotations

from typing import Any

import pytest

from whatif.scheduler.model import Node, Task
from whatif.scheduler.plugins import PredicatesPlugin

CORDONED = Node("gpu-1", {"nvidia.com/gpu": 8.0, "pods": 110.0}, unschedulable=True)


@pytest.mark.parametrize(
    ("tolerations", "refused"),
    [
        ([], True),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], False),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], False),
        ([{"operator": "Exists"}], False),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], True),
        ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], True),
    ],
)
def test_a_cordoned_node_takes_only_a_pod_that_tolerates_the_cordon(
    tolerations: list[dict[str, Any]], refused: bool
) -> None:
    plugin = PredicatesPlugin(session=None, option={})
    task = Task("team-a/pod", "team-a/job", {"nvidia.com/gpu": 1.0}, tolerations=tolerations)
    said = plugin.predicate(task, CORDONED)
    assert (said == "node(s) were unschedulable") is refused, said
    assert plugin.predicate(task, Node("gpu-2", {"nvidia.com/gpu": 8.0, "pods": 110.0})) is None
