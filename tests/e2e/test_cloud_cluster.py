"""`pulumi up` for real on the cloud example (`Pulumi.aicloud-eks.yaml`): the recorded EKS cluster's
91 nodes as KWOK nodes (`tests/fixtures/cluster/eks/aicloud-eks-fresh.yaml`: two H100 node groups
with EKS's network-node labels and taints, an L40S group, system nodes), HyperNodes built by
Volcano's label discovery from the AWS preset's tiers, and Volcano's scheduler placing the
models on their pools: a gang on two H100 pools inside one layer-2 network node, a model of a
tenant's L40S quota on L40S nodes. A pod made by hand in the tenant's H100 queue that selects
L40S nodes never runs there: the quota per type holds on the real scheduler. The gang whose
weights wait for a volume no provisioner makes fails `up`, naming its PodGroup.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import e2e_config, recorded_nodes, secret_names
from tests.e2e.test_example_cluster import mended, mending

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2ecloud"
LAYER2 = "topology.k8s.aws/network-node-layer-2"
NODE_GROUP = "volcano.sh/nodegroup-name"
STORAGE_CLASS = {
    # The weight claim's class, binding when a pod first uses it (as EFS and FSx classes are
    # commonly set up); nothing provisions it here, so the claim stays Pending, which is what the
    # provider waits for with such a class (pulumi-kubernetes `untilCoreV1PersistentVolumeClaimReady`).
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "fsx-lustre"},
    "provisioner": "fsx.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    nodes = recorded_nodes("eks/aicloud-eks-fresh.yaml")
    yield from start_cluster(tmp_path_factory.mktemp("cloud-cluster"), real_programs, nodes)


@pytest.fixture(scope="module")
def applied(cluster: LocalCluster, real_programs: dict[str, Path]) -> str:
    manifest = cluster.folder / "storage-class.yaml"
    manifest.write_text(yaml.safe_dump(STORAGE_CLASS))
    cluster.kubectl("apply", "-f", str(manifest))
    config = e2e_config("aicloud-eks", cluster.kubeconfig)
    # The gang that cannot start fails `up` after its own budgets, a minute here, while the other
    # models keep the sandbox's.
    config["models"]["llama-405b"]["startup"] = {"placeTimeoutSeconds": 30, "loadTimeoutSeconds": 30}
    stack = PulumiStack.create(cluster.folder / "project", STACK, config, real_programs, secret_names("aicloud-eks"))
    # llama-405b's weights are on a claim of the FSx class, which binds when a provisioner makes
    # its volume; none runs here, so Volcano leaves the gang Pending and `up` fails on it, by name,
    # with what Volcano wrote on its PodGroup (the what-if checks only that claims exist).
    with mending(cluster):
        result = stack.up(check=False)
    assert result.returncode != 0, result.output[-3000:]
    assert "LeaderWorkerSet pretrain/llama-405b did not run within its budget" in result.output, result.output[-3000:]
    assert "PodGroup pretrain/llama-405b: phase " in result.output and "Unschedulable" in result.output
    return result.output


def _running(cluster: LocalCluster, namespace: str, model: str, count: int) -> list[dict[str, Any]]:
    pods = cluster.get_json("pods", "-n", namespace, "-l", f"app.kubernetes.io/instance={model}")["items"]
    running = [p for p in pods if p["status"].get("phase") == "Running"]
    return running if len(running) >= count else []


def _labels(cluster: LocalCluster, node: str) -> dict[str, str]:
    return dict(cluster.get_json("nodes", node)["metadata"]["labels"])


def test_the_type_queues_open_with_their_node_groups(cluster: LocalCluster, applied: str) -> None:
    for queue, groups in (("search-l40s", ["l40s"]), ("search-h100", ["h100-a", "h100-b"])):
        found = cluster.wait_for(
            lambda q=queue: (
                (o := cluster.get_json("queues.scheduling.volcano.sh", q))["status"].get("state") == "Open" and o
            ),
            60,
            f"Queue {queue} to be Open",
        )
        assert (
            found["spec"]["affinity"]["nodeGroupAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == groups
        )


def test_hypernodes_are_built_from_the_aws_labels(cluster: LocalCluster, applied: str) -> None:
    def leaves() -> list[set[str]]:
        items = cluster.get_json("hypernodes.topology.volcano.sh")["items"]
        return [
            {m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]}
            for h in items
            if h["spec"]["tier"] == 1 and all(m["type"] == "Node" for m in h["spec"]["members"])
        ]

    # 8 leaves of h100-a and the 2 grown leaves of h100-b, 8 nodes each; the L40S nodes have no
    # network labels and are in none.
    def ten() -> list[set[str]]:
        found = leaves()
        return found if len(found) >= 10 else []

    found = cluster.wait_for(ten, 240, "discovery's tier-1 HyperNodes")
    assert sorted(len(nodes) for nodes in found)[-10:] == [8] * 10
    mended(cluster)


def test_a_gang_on_two_h100_pools_runs_inside_one_layer2_domain(cluster: LocalCluster, applied: str) -> None:
    mended(cluster)
    pods = cluster.wait_for(lambda: _running(cluster, "alignment", "deepseek-v3", 2), 240, "deepseek-v3's gang to run")
    labels = [_labels(cluster, p["spec"]["nodeName"]) for p in pods]
    assert len({node[LAYER2] for node in labels}) == 1, [node[LAYER2] for node in labels]
    assert {node[NODE_GROUP] for node in labels} <= {"h100-a", "h100-b"}


def test_models_run_on_their_pools(cluster: LocalCluster, applied: str) -> None:
    for namespace, model, count, groups in (
        ("search", "bge-m3", 4, {"l40s"}),
        ("chat", "qwen3-32b", 4, {"h100-b"}),
    ):
        pods = cluster.wait_for(
            lambda n=namespace, m=model, c=count: _running(cluster, n, m, c), 180, f"{model} to run"
        )
        assert {_labels(cluster, p["spec"]["nodeName"])[NODE_GROUP] for p in pods} == groups, model


def test_an_h100_grant_is_not_spent_on_l40s_by_a_pod_made_by_hand(cluster: LocalCluster, applied: str) -> None:
    def pod(name: str, queue: str) -> dict[str, Any]:
        group = f"podgroup-{name}"
        return {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": group, "namespace": "search"},
                    "spec": {"minMember": 1, "queue": queue},
                },
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": "search",
                        "annotations": {
                            "scheduling.k8s.io/group-name": group,
                            "scheduling.volcano.sh/queue-name": queue,
                        },
                    },
                    "spec": {
                        "schedulerName": "volcano",
                        "nodeSelector": {NODE_GROUP: "l40s"},
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "resources": {
                                    "requests": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"},
                                    "limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"},
                                },
                            }
                        ],
                    },
                },
            ],
        }

    for name, queue in (("by-hand-l40s", "search-l40s"), ("by-hand-h100", "search-h100")):
        manifest = cluster.folder / f"{name}.yaml"
        manifest.write_text(yaml.safe_dump(pod(name, queue)))
        cluster.kubectl("apply", "-f", str(manifest))

    def placed(name: str) -> str:
        return str(cluster.get_json("pods", name, "-n", "search")["spec"].get("nodeName") or "")

    node = cluster.wait_for(lambda: placed("by-hand-l40s"), 120, "the L40S queue's pod to be placed")
    assert _labels(cluster, node)[NODE_GROUP] == "l40s"
    # Several scheduling cycles after the first pod was placed, the other is still nowhere.
    cluster.wait_for(
        lambda: (
            cluster.get_json("podgroups.scheduling.volcano.sh", "podgroup-by-hand-h100", "-n", "search")
            .get("status", {})
            .get("conditions")
        ),
        60,
        "the scheduler's verdict on the H100 queue's pod",
    )
    assert placed("by-hand-h100") == ""
    conditions = cluster.get_json("podgroups.scheduling.volcano.sh", "podgroup-by-hand-h100", "-n", "search")
    messages = " ".join(c.get("message", "") for c in conditions["status"]["conditions"])
    assert "node group" in messages or "nodegroup" in messages, messages
