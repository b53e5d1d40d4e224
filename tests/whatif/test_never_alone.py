"""`never` means a model cannot run even alone on the cluster's nodes with nothing else running.
Two stuck models of one change that each fit the quota alone, but not together, both wait; before,
they were tried together and one was answered `never` (it ran on the real cluster:
`tests/e2e/test_whatif_real.py`). Both engines."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from live.cluster_state import state_from_objects
from tests.conftest import stack_raw
from tests.e2e.stacks import dev_nodes
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.predict import WAITS, predict
from whatif.volcano.predict import predict_with_volcano

pytestmark = pytest.mark.slow  # renders a stack


def _busy_cluster() -> Any:
    """The dev stack's four nodes of two GPUs, all held by a gang of another queue that may not
    be preempted nor reclaimed."""
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "batch"},
        "spec": {"weight": 1, "reclaimable": False},
        "status": {"state": "Open"},
    }
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "busy", "namespace": "batch", "uid": "busy"},
        "spec": {"minMember": 4, "queue": "batch"},
        "status": {"phase": "Running"},
    }
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"busy-{i}",
                "namespace": "batch",
                "uid": f"busy-{i}",
                "annotations": {"scheduling.k8s.io/group-name": "busy", "volcano.sh/preemptable": "false"},
            },
            "spec": {
                "nodeName": f"dev-gpu-{i}",
                "schedulerName": "volcano",
                "containers": [{"name": "w", "resources": {"requests": requests, "limits": requests}}],
            },
            "status": {"phase": "Running"},
        }
        for i in range(1, 5)
    ]
    nodes = [{"apiVersion": "v1", "kind": "Node", **node} for node in dev_nodes()]
    return state_from_objects([*nodes, queue, group, *pods], "busy")


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_models_that_fit_the_quota_alone_wait_rather_than_never(render_raw: Any, engine: str) -> None:
    answer: Any = predict
    if engine == "volcano":
        volcano_engine()
        answer = functools.partial(predict_with_volcano, repeat=1)
    raw = stack_raw("dev")
    raw["tenants"]["team-a"]["queue"]["capability"] = {"nvidia.com/gpu": 6, "cpu": 64, "memory": "256Gi"}
    template = raw["models"].pop("qwen3-0-6b")
    for name in ("first", "second"):  # three pods of two GPUs each: 6 of the queue's 6, on 3 nodes
        raw["models"][name] = {
            **template,
            "replicas": 3,
            "serviceName": name,
            "resources": {"gpus": 2, "cpu": 4, "memory": "16Gi"},
            "engine": {**template["engine"], "tensorParallelSize": 2},
        }
    render = render_raw(raw)
    verdicts = {v.model: v for v in answer(_busy_cluster(), render.spec, render.rendered).verdicts}
    assert {name: v.verdict for name, v in verdicts.items()} == {"first": WAITS, "second": WAITS}, verdicts
