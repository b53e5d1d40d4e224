"""A change made as a pull request, for real: the what-if reads the cluster, names what the change
will evict, `pulumi up` applies it, and Volcano's scheduler evicts exactly that.

The cluster is the dev stack's four nodes of two GPUs, full: a p3-low model (one pod of two GPUs)
and a p1-high one (three pods). The pull request adds another p1-high model of two GPUs. Volcano's
preempt action evicts only pods of lower priority than the preemptor (plugins/priority), and only
`low`'s pod is, on one node: no random tie decides the victim. (With the three pods at p2-normal,
the node whose pod goes is a tie between equal nodes, and a `normal` pod evicted is recreated and
evicts `low`'s in turn; the what-if reports such a tie as one.)
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
STACK = "e2echange"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def model(priority_class: str, replicas: int) -> dict[str, Any]:
    return {
        "tenant": "team-a",
        "image": "vllm/vllm-openai:v0.33.0",
        "source": {"hub": {"id": "Qwen/Qwen3-0.6B"}},
        "servedModelName": "Qwen3-0.6B",
        "replicas": replicas,
        "resources": {"gpus": 2, "cpu": 4, "memory": "16Gi"},
        "priorityClass": priority_class,
        "startup": {"loadTimeoutSeconds": 600},
    }


def full_cluster(kubeconfig: Path) -> dict[str, Any]:
    """The four nodes full. The queue's capability is above what runs, so a new PodGroup is
    enqueued (the capacity plugin admits up to the capability) and then preempts in its queue."""
    queue = {"capability": {"nvidia.com/gpu": 16, "cpu": 64, "memory": "256Gi"}, "deserved": {"nvidia.com/gpu": 8}}
    return e2e_config(
        "dev",
        kubeconfig,
        {
            "tenants": {"team-a": {"queue": queue}},
            "models": {"low": model("p3-low", 1), "steady": model("p1-high", 3)},
        },
    )


def with_urgent_model(kubeconfig: Path) -> dict[str, Any]:
    raw = full_cluster(kubeconfig)
    raw["models"]["urgent"] = model("p1-high", 1)
    return raw


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("change-cluster"), real_programs, dev_nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    made = PulumiStack.create(cluster.folder / "project", STACK, full_cluster(cluster.kubeconfig), real_programs)
    made.up()
    return made


def running_pods(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    pods = cluster.get_json("pods", "-n", "team-a")["items"]
    return {p["metadata"]["name"]: p for p in pods if p["status"].get("phase") == "Running"}


def whatif(cluster: LocalCluster, stack: PulumiStack, candidate: Path) -> dict[str, Any]:
    """`whatif --from <dump of this cluster> --json`, as a reviewer runs it on the pull request."""
    dump = cluster.dump(cluster.folder / "cluster.json")
    command = [*TOOL, "whatif", "--stack", STACK, "--config-file", str(candidate), "--from", str(dump), "--json"]
    result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    return json.loads(result.stdout)


def test_the_pods_the_scheduler_evicts_are_those_the_whatif_named(cluster: LocalCluster, stack: PulumiStack) -> None:
    def full() -> dict[str, dict[str, Any]]:
        pods = running_pods(cluster)
        return pods if len(pods) == 4 else {}

    before = cluster.wait_for(full, 120, "the four pods of the full cluster")
    candidate = stack.folder / "candidate.yaml"
    stack.write_config(with_urgent_model(cluster.kubeconfig))
    candidate.write_text(stack.stack_file.read_text())
    predicted = whatif(cluster, stack, candidate)
    verdicts = {v["model"]: v for v in predicted["models"]}
    assert verdicts["urgent"]["verdict"] == "fits-after-eviction", json.dumps(verdicts["urgent"])
    assert predicted["engine"] == "volcano"
    named = {(x["namespace"], x["podGroup"]) for v in verdicts.values() for x in v["victims"]}

    stack.up()

    after = running_pods(cluster)
    evicted = {
        (p["metadata"]["namespace"], p["metadata"]["annotations"][GROUP_ANNOTATION])
        for name, p in before.items()
        if name not in after
    }
    assert evicted == named
    models = {
        p["metadata"]["labels"]["app.kubernetes.io/instance"]
        for p in before.values()
        if p["metadata"]["name"] not in after
    }
    assert models == {"low"}
    assert any(p["metadata"]["labels"]["app.kubernetes.io/instance"] == "urgent" for p in after.values())
