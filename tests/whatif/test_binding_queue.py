"""A reason names the queue that binds, with its key: a full parent queue above a child with room
(`tenants.<parent>.queue.capability`), and a tenant's queue of one accelerator type
(`tenants.<t>.queue.byType.<type>.capability`), from either engine. On the cloud example's fresh
cluster, changed the way each case needs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from live.cluster_snapshot import snapshot_list
from live.cluster_state import ClusterState, read_file, state_from_objects
from offline.render import render_stack
from tests.conftest import PROJECT_DIR, stack_raw, write_stack
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.predict import WAITS, predict
from whatif.volcano.predict import predict_with_volcano

pytestmark = pytest.mark.slow  # renders the cloud example and reads its 91-node cluster

NODE_GROUP = "eks.amazonaws.com/nodegroup"
FRESH = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"


def _running(state: ClusterState, queue: str, group: str, pods: int, gpus: int) -> ClusterState:
    """The cluster with a gang of `pods` running in `queue` on nodes of node group `group`, one pod
    to a node; pods that may not be preempted (`volcano.sh/preemptable: "false"`)."""
    nodes = [n["metadata"]["name"] for n in state.nodes if n["metadata"]["labels"].get(NODE_GROUP) == group]
    name = f"running-{queue}"
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    gang = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "other", "uid": name},
            "spec": {"minMember": pods, "queue": queue},
            "status": {"phase": "Running"},
        },
        *(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": "other",
                    "uid": f"{name}-{i}",
                    "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/preemptable": "false"},
                },
                "spec": {
                    "nodeName": nodes[i],
                    "schedulerName": "volcano",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "w", "resources": {"requests": requests, "limits": requests}}],
                },
                "status": {"phase": "Running"},
            }
            for i in range(pods)
        ),
    ]
    return state_from_objects([*snapshot_list(state)["items"], *gang], "fresh, with running work")


def _verdict(
    tmp_path: Path, engine: str, change: Callable[[dict[str, Any]], None], state: ClusterState, model: str
) -> Any:
    answer: Any = predict
    if engine == "volcano":
        volcano_engine()
        answer = functools.partial(predict_with_volcano, repeat=1)
    raw = stack_raw("aicloud-eks")
    change(raw)
    result = render_stack(PROJECT_DIR, "binding", write_stack(tmp_path / "Pulumi.binding.yaml", raw))
    prediction = answer(state, result.spec, result.rendered)
    return next(v for v in prediction.verdicts if v.model == model)


def _research_of_32(raw: dict[str, Any]) -> None:
    """`research` holds 32 GPUs, `alignment` (not reclaimable) deserves 24 of them and
    `pretrain` may hold all 32; one replica of the 405B model (16 GPUs)."""
    raw["tenants"]["research"]["queue"].update(capability={"nvidia.com/gpu": 32}, deserved={"nvidia.com/gpu": 32})
    raw["tenants"]["alignment"]["queue"].update(
        capability={"nvidia.com/gpu": 32}, deserved={"nvidia.com/gpu": 24}, reclaimable=False
    )
    raw["tenants"]["pretrain"]["queue"].update(capability={"nvidia.com/gpu": 32}, deserved={"nvidia.com/gpu": 8})
    raw["models"]["deepseek-v3"]["replicas"] = 0
    raw["models"]["llama-405b"]["replicas"] = 1


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_a_full_parent_is_named_not_the_child_with_room(tmp_path: Path, engine: str) -> None:
    """`alignment` runs 24 GPUs and may not be reclaimed from, so `research` has 8 left
    and `pretrain`, at 0 of 32, cannot start a gang of 16."""
    state = _running(read_file(FRESH), "alignment", "h100-a", 3, 8)
    verdict = _verdict(tmp_path, engine, _research_of_32, state, "llama-405b")
    assert verdict.verdict == WAITS, verdict.reason
    assert verdict.key == "tenants.research.queue.capability", verdict.reason
    assert "queue `research` (above the model's queue `pretrain`) is at 24 of 32 GPUs" in verdict.reason


def _l40s_quota_of_28(raw: dict[str, Any]) -> None:
    """`search` may hold 28 L40S GPUs (and 64 in all); its L40S model asks for 8."""
    raw["tenants"]["search"]["queue"]["byType"]["l40s"] = {
        "capability": {"nvidia.com/gpu": 28},
        "deserved": {"nvidia.com/gpu": 24},
    }
    raw["models"]["bge-m3"]["replicas"] = 8


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_a_type_quota_is_named_by_its_by_type_key(tmp_path: Path, engine: str) -> None:
    """`search` runs 24 GPUs on the eight 4-GPU L40S nodes, so the nodes have room for 8 more and
        its L40S queue for 4: the queue of the type binds, not its parent (64) nor the nodes. Before,
    the reason named `tenants.search.queue.capability`, a key with room."""
    state = _running(read_file(FRESH), "search-l40s", "l40s", 8, 3)
    verdict = _verdict(tmp_path, engine, _l40s_quota_of_28, state, "bge-m3")
    assert verdict.verdict == WAITS, verdict.reason
    assert verdict.key == "tenants.search.queue.byType.l40s.capability", verdict.reason
    assert verdict.reason.startswith("queue `search-l40s` is at 24 of 28 GPUs and the pending pods need 8 more")
