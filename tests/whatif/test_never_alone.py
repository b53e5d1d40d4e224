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


def answer_of(engine: str) -> Any:
    """The prediction of an engine: the model, or Volcano's code run once."""
    if engine == "volcano":
        volcano_engine()
        return functools.partial(predict_with_volcano, repeat=1)
    return predict


def two_models(capability: int, replicas: int) -> dict[str, Any]:
    """The dev stack with its model replaced by `first` and `second`, each `replicas` pods of two
    GPUs, in a team-a queue of `capability` GPUs."""
    raw = stack_raw("dev")
    queue = raw["tenants"]["team-a"]["queue"]
    queue["capability"] = {"nvidia.com/gpu": capability, "cpu": 64, "memory": "256Gi"}
    queue["deserved"]["nvidia.com/gpu"] = min(queue["deserved"]["nvidia.com/gpu"], capability)
    template = raw["models"].pop("qwen3-0-6b")
    for name in ("first", "second"):
        raw["models"][name] = {
            **template,
            "replicas": replicas,
            "serviceName": name,
            "resources": {"gpus": 2, "cpu": 4, "memory": "16Gi"},
            "engine": {**template["engine"], "tensorParallelSize": 2},
        }
    return raw


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_models_that_fit_the_quota_alone_wait_rather_than_never(render_raw: Any, engine: str) -> None:
    render = render_raw(two_models(capability=6, replicas=3))  # three pods each: 6 of the queue's 6, on 3 nodes
    verdicts = {v.model: v for v in answer_of(engine)(_busy_cluster(), render.spec, render.rendered).verdicts}
    assert {name: v.verdict for name, v in verdicts.items()} == {"first": WAITS, "second": WAITS}, verdicts
