"""The serving side of a stack through `pulumi up` for real: aicloud-b (the gateway with its
routers, pools, objectives, routes and Istio's DestinationRules; monitors, alert rules and the
dashboard; KEDA ScaledObjects and an HPA; prefill and decode apart; NetworkPolicies and Pod
Security labels) on a cluster of its shape, every object taken by the real API server against the
CRDs of the releases the stack targets, then an edit converging in one `up`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from offline.render import render_stack
from sandbox.api import KubectlError
from sandbox.cluster import LocalCluster
from sandbox.nodes import stack_nodes
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR, load, stack_raw, write_stack
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import e2e_config

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2eserving"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(
        tmp_path_factory.mktemp("serving-cluster"), real_programs, stack_nodes(load(stack_raw("aicloud-b")))
    )


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    # kube-prometheus-stack's namespace, where the dashboard goes: the cluster's, not the stack's.
    cluster.kubectl("create", "namespace", "monitoring")
    made = PulumiStack.create(
        cluster.folder / "project", STACK, e2e_config("aicloud-b", cluster.kubeconfig), real_programs
    )
    made.up()
    return made


def test_every_serving_object_is_on_the_cluster(cluster: LocalCluster, stack: PulumiStack) -> None:
    kinds = {
        "InferencePool", "InferenceObjective", "HTTPRoute", "Gateway", "DestinationRule", "PodMonitor",
        "PrometheusRule", "ScaledObject", "HorizontalPodAutoscaler", "NetworkPolicy", "LeaderWorkerSet",
    }  # fmt: skip
    objects = [o for o in render_stack(PROJECT_DIR, STACK, stack.stack_file).rendered.objects if o.kind in kinds]
    assert {o.kind for o in objects} == kinds
    for obj in objects:
        group = obj.api_version.rpartition("/")[0]
        resource = f"{obj.kind.lower()}.{group}" if group else obj.kind.lower()
        live = cluster.get_json(resource, obj.name, *(["-n", obj.namespace] if obj.namespace else []))
        assert live["metadata"]["name"] == obj.name
    namespace = cluster.get_json("namespace", "search")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_the_slices_run_and_a_change_converges_in_one_up(cluster: LocalCluster, stack: PulumiStack) -> None:
    for group in ("qwen3-235b-pd-s0", "qwen3-235b-pd-s1"):
        assert (
            cluster.get_json("podgroups.scheduling.volcano.sh", group, "-n", "search")["status"]["phase"] == "Running"
        )
    config = e2e_config("aicloud-b", cluster.kubeconfig)
    config["models"]["bge-reranker"]["replicas"] = 3
    stack.write_config(config)
    stack.up()
    assert cluster.get_json("deployment", "bge-reranker", "-n", "search")["spec"]["replicas"] == 3
    stack.preview("--refresh", "--expect-no-changes")


def test_the_managed_prometheus_objects_are_taken_by_the_api_server(
    cluster: LocalCluster, stack: PulumiStack, tmp_path: Path
) -> None:
    """`observability.backend: google-managed` on the same cluster: every PodMonitoring and the
    ClusterRules pass the real API server's checks of the CRDs generated from Managed Service for
    Prometheus' module (server-side dry run: their CEL rules, a port given by name among them)."""
    import yaml

    raw = stack_raw("aicloud-b")
    raw["observability"]["backend"] = "google-managed"
    path = write_stack(tmp_path / "Pulumi.gmp.yaml", raw)
    objects = [
        o.manifest
        for o in render_stack(PROJECT_DIR, "gmp", path).rendered.objects
        if o.kind in ("PodMonitoring", "ClusterRules")
    ]
    assert {o["kind"] for o in objects} == {"PodMonitoring", "ClusterRules"}
    applied = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(objects))
    assert applied.count("(server dry run)") == len(objects), applied
    monitor = next(o for o in objects if o["kind"] == "PodMonitoring")
    broken = {**monitor, "spec": {**monitor["spec"], "endpoints": [{"port": 0, "interval": "30s"}]}}
    with pytest.raises(KubectlError) as refused:
        cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(broken))
    assert "Port is required" in refused.value.stderr
