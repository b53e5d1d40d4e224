"""`pulumi up` for real on the dev stack: the Pulumi CLI, its Kubernetes provider, an API server
with etcd, KWOK nodes, Volcano's scheduler and controllers and the LWS controller, all built from
their Go modules (`binaries.py`), on 127.0.0.1.

The tests run in order on one cluster, as a platform team would: up from empty, a preview that
shows nothing, the model running, a bad config refused, destroy.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offline.render import render_stack
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import dev_nodes, e2e_config

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2edev"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("dev-cluster"), real_programs, dev_nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    return PulumiStack.create(cluster.folder / "project", STACK, e2e_config("dev", cluster.kubeconfig), real_programs)


@pytest.fixture(scope="module")
def applied(stack: PulumiStack) -> str:
    """`pulumi up` from empty; its output."""
    return stack.up().output


def rendered_objects(stack: PulumiStack) -> list[Any]:
    """What the offline engine renders for the same stack file."""
    return render_stack(PROJECT_DIR, STACK, stack.stack_file).rendered.objects


def managers(obj: dict[str, Any]) -> set[str]:
    return {entry["manager"] for entry in obj["metadata"].get("managedFields") or []}


def test_up_from_empty_creates_every_object_the_render_lists(
    cluster: LocalCluster, stack: PulumiStack, applied: str
) -> None:
    objects = rendered_objects(stack)
    assert objects, "the render lists nothing"
    for obj in objects:
        kind = obj.kind.removesuffix("Patch") if obj.patch else obj.kind
        group = obj.api_version.rpartition("/")[0]
        resource = f"{kind.lower()}.{group}" if group else kind.lower()
        args = [resource, obj.name] + (["-n", obj.namespace] if obj.namespace else [])
        live = cluster.get_json(*args)
        owners = {m for m in managers(live) if m.startswith("pulumi-kubernetes")}
        assert owners, f"{kind} {obj.name} is not managed by the provider: {managers(live)}"


def test_queues_are_opened_by_volcanos_controller(cluster: LocalCluster, applied: str) -> None:
    queue = cluster.get_json("queues.scheduling.volcano.sh", "team-a")
    assert queue["status"]["state"] == "Open"


def test_volcanos_admission_webhooks_are_in_the_path(cluster: LocalCluster, applied: str) -> None:
    refused = subprocess.run(
        [str(cluster.programs["kubectl"]), "--kubeconfig", str(cluster.kubeconfig), "delete", "queue", "root"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0 and "admission webhook" in refused.stderr, refused.stderr
    assert cluster.get_json("queues.scheduling.volcano.sh", "root")["metadata"]["name"] == "root"


def test_nodes_carry_the_topology_labels(cluster: LocalCluster, applied: str) -> None:
    for i in range(1, 5):
        node = cluster.get_json("nodes", f"dev-gpu-{i}")
        assert node["metadata"]["labels"]["topology.example.com/leaf"] == "leaf-a"


def test_the_hypernode_lists_the_leaf(cluster: LocalCluster, applied: str) -> None:
    hyper = cluster.get_json("hypernodes.topology.volcano.sh", "leaf-a")
    assert hyper["spec"]["tier"] == 1


def test_the_scheduler_runs_the_policy_the_stack_applied(
    cluster: LocalCluster, stack: PulumiStack, applied: str
) -> None:
    conf = cluster.get_json("configmaps", "volcano-scheduler-configmap", "-n", "volcano-system")
    text = conf["data"]["volcano-scheduler.conf"]
    cluster.wait_for(lambda: cluster.scheduler_conf_synced(text), 30, "the scheduler's conf file to be the stack's")
    assert "network-topology-aware" in text or "binpack" in text


def test_the_model_is_bound_by_volcano_and_runs(cluster: LocalCluster, applied: str) -> None:
    def running() -> list[dict[str, Any]]:
        pods = cluster.get_json("pods", "-n", "team-a", "-l", "app.kubernetes.io/instance=qwen3-0-6b")["items"]
        return [p for p in pods if p["status"].get("phase") == "Running"]

    pods = cluster.wait_for(running, 120, "the model's pod to run")
    assert pods[0]["spec"]["schedulerName"] == "volcano"
    assert pods[0]["spec"]["nodeName"].startswith("dev-gpu-")


def test_a_preview_right_after_shows_no_change(stack: PulumiStack, applied: str) -> None:
    result = stack.preview("--expect-no-changes", check=False)
    assert result.returncode == 0, result.output[-4000:]


def spec_generations(cluster: LocalCluster) -> dict[str, Any]:
    """Every object the stack could write, by uid, with the generation of its spec (status writes
    by the controllers do not count)."""
    kinds = (
        "namespaces,queues.scheduling.volcano.sh,hypernodes.topology.volcano.sh,priorityclasses,deployments,services"
    )
    items = cluster.get_json(kinds, "-A")["items"]
    nodes = cluster.get_json("nodes")["items"]
    return {
        **{o["metadata"]["uid"]: o["metadata"].get("generation") for o in items},
        **{n["metadata"]["name"]: n["metadata"].get("labels") for n in nodes},
    }


def test_a_bad_config_never_reaches_the_cluster(cluster: LocalCluster, stack: PulumiStack, applied: str) -> None:
    before = spec_generations(cluster)
    good = e2e_config("dev", cluster.kubeconfig)
    bad = e2e_config("dev", cluster.kubeconfig)
    bad["tenants"]["team-a"]["queue"]["deserved"] = {"nvidia.com/gpu": 16}  # above its capability of 8
    bad["models"]["qwen3-0-6b"]["replicas"] = 2  # a change that would otherwise be applied
    stack.write_config(bad)
    try:
        result = stack.up(check=False)
    finally:
        stack.write_config(good)
    assert result.returncode != 0
    assert "tenants.team-a.queue.deserved" in result.output, result.output[-3000:]
    assert "Traceback" not in result.output
    assert spec_generations(cluster) == before


def test_destroy_removes_what_the_stack_made_and_keeps_what_it_retains(
    cluster: LocalCluster, stack: PulumiStack, applied: str
) -> None:
    stack.destroy()
    for gone in (
        ["queues.scheduling.volcano.sh", "team-a"],
        ["hypernodes.topology.volcano.sh", "leaf-a"],
        ["priorityclass.scheduling.k8s.io", "p2-normal"],
        ["deployments", "qwen3-0-6b", "-n", "team-a"],
    ):
        assert cluster.kubectl("get", *gone, check=False) == "", gone
    # `tenants.<t>.retainNamespaces` and `topology.nodeLabels.retainOnDelete` are on by default:
    # the namespace (what else it holds) and the nodes' placement outlive the stack
    assert cluster.get_json("namespace", "team-a")["metadata"].get("deletionTimestamp") is None
    assert cluster.get_json("nodes", "dev-gpu-1")["metadata"]["labels"]["topology.example.com/leaf"] == "leaf-a"
    policy = cluster.get_json("configmaps", "volcano-scheduler-configmap", "-n", "volcano-system")
    assert "volcano-scheduler.conf" not in (policy.get("data") or {}), "the policy patch's key outlived the stack"
