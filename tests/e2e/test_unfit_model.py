"""A model that cannot fit on the cluster as it is, for real: the what-if says it waits before the
change, `pulumi up` applies it and fails once the model's budgets are spent (the LeaderWorkerSet is
never `Available`), naming it, while Volcano's scheduler leaves its gang Pending with an
Unschedulable condition on its PodGroup.

The dev cluster (four nodes of two GPUs under one leaf) runs the dev stack's one-GPU model; the
change adds a four-node model of two GPUs per node held inside the leaf (hard, tier 1). It would
fit the empty leaf, so the offline checks accept it, but one node has a GPU taken: the gang waits,
and the failed `up` says what the PodGroup says (its `Unschedulable` condition) and names `explain`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR, TOOL
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import dev_nodes, e2e_config

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2eunfit"
GANG = "wide"


def with_wide_model(kubeconfig: Path) -> dict[str, Any]:
    raw = e2e_config("dev", kubeconfig)
    raw["models"][GANG] = {
        "tenant": "team-a",
        "image": "vllm/vllm-openai:v0.33.0",
        "source": {"hub": {"id": "Qwen/Qwen3-32B"}},
        "servedModelName": "Qwen3-32B",
        "nodesPerReplica": 4,
        "resources": {"gpus": 2, "cpu": 8, "memory": "32Gi"},
        "engine": {"tensorParallelSize": 2, "pipelineParallelSize": 4},
        "topology": {"mode": "hard", "highestTier": 1},
        "priorityClass": "p2-normal",
        # `pulumi up` waits placing plus loading: a minute here.
        "startup": {"loadTimeoutSeconds": 30, "placeTimeoutSeconds": 30},
    }
    return raw


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("unfit-cluster"), real_programs, dev_nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    made = PulumiStack.create(cluster.folder / "project", STACK, e2e_config("dev", cluster.kubeconfig), real_programs)
    made.up()
    return made


def test_a_gang_that_cannot_fit_waits_as_the_whatif_said(cluster: LocalCluster, stack: PulumiStack) -> None:
    candidate = stack.folder / "candidate.yaml"
    stack.write_config(with_wide_model(cluster.kubeconfig))
    candidate.write_text(stack.stack_file.read_text())
    dump = cluster.dump(cluster.folder / "cluster.json")
    command = [*TOOL, "whatif", "--stack", STACK, "--config-file", str(candidate), "--from", str(dump), "--json"]
    result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 1, result.stderr[-3000:]
    verdict = next(v for v in json.loads(result.stdout)["models"] if v["model"] == GANG)
    assert verdict["verdict"] == "waits", verdict

    failed = stack.up(check=False)
    assert failed.returncode != 0, failed.output[-3000:]
    assert f"{GANG}" in failed.output and "timed out waiting for the condition" in failed.output, failed.output[-3000:]
    # The error hook read the PodGroup the scheduler left waiting and said why, with where to ask.
    assert f"PodGroup team-a/{GANG}: phase " in failed.output, failed.output[-3000:]
    assert "Unschedulable" in failed.output and f"volcano-platform explain {GANG} --stack {STACK}" in failed.output

    def unschedulable() -> dict[str, Any] | None:
        for group in cluster.get_json("podgroups.scheduling.volcano.sh", "-n", "team-a")["items"]:
            conditions = group.get("status", {}).get("conditions") or []
            if group["metadata"]["name"].startswith(GANG) and any(c["type"] == "Unschedulable" for c in conditions):
                return group
        return None

    group = cluster.wait_for(unschedulable, 120, f"the PodGroup of {GANG} to be marked Unschedulable")
    assert group["status"].get("phase") in ("Pending", "Inqueue"), group["status"]
    pods = cluster.get_json("pods", "-n", "team-a", "-l", f"app.kubernetes.io/instance={GANG}")["items"]
    assert pods and not [p for p in pods if p["spec"].get("nodeName")], "a pod of the gang was bound alone"
