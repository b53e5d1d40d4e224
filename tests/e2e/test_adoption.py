"""Adoption for real: a tenant's namespace and Queue made by hand with `kubectl apply`
(client-side) and its model's Deployment with `kubectl apply --server-side`, each differing from
what the stack declares, taken over by the stack's `adopt` settings: `pulumi up` imports them with
no field-manager conflict and no recreation, and then owns them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.render import render_stack
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import dev_nodes, e2e_config

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2eadopt"
MODEL = "qwen3-0-6b"


def adopting_config(kubeconfig: Path) -> dict[str, Any]:
    raw = e2e_config("dev", kubeconfig)
    raw["tenants"]["team-a"]["adopt"] = ["namespaces", "queue"]
    raw["models"][MODEL]["adopt"] = ["workload"]
    return raw


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("adopt-cluster"), real_programs, dev_nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    return PulumiStack.create(cluster.folder / "project", STACK, adopting_config(cluster.kubeconfig), real_programs)


def hand_made(stack: PulumiStack) -> dict[str, dict[str, Any]]:
    """The stack's own Namespace, Queue and Deployment as a team would have written them before
    the stack existed: a different Queue weight, another image, one replica more, a label of their
    own; what the stack manages is never in them."""
    render = render_stack(PROJECT_DIR, STACK, stack.stack_file).rendered
    out = {}
    for kind, name, namespace in (
        ("Namespace", "team-a", None),
        ("Queue", "team-a", None),
        ("Deployment", MODEL, "team-a"),
    ):
        manifest = copy.deepcopy(render.find(kind, name, namespace).manifest)
        manifest["metadata"].pop("annotations", None)
        manifest["metadata"]["labels"] = {**(manifest["metadata"].get("labels") or {}), "team": "made-by-hand"}
        out[kind] = manifest
    out["Queue"]["spec"]["weight"] = 3
    deployment = out["Deployment"]["spec"]
    deployment["replicas"] = 2
    deployment["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.30.0"
    return out


def uid(cluster: LocalCluster, *what: str) -> str:
    return str(cluster.get_json(*what)["metadata"]["uid"])


def test_objects_applied_by_hand_are_adopted_without_conflict_or_recreation(
    cluster: LocalCluster, stack: PulumiStack
) -> None:
    made = hand_made(stack)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(made["Namespace"]))
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(made["Queue"]))
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(made["Deployment"]))
    before = {
        "namespace": uid(cluster, "namespace", "team-a"),
        "queue": uid(cluster, "queues.scheduling.volcano.sh", "team-a"),
        "deployment": uid(cluster, "deployment", MODEL, "-n", "team-a"),
    }

    result = stack.up()

    assert "conflict" not in result.output.lower(), result.output[-3000:]
    after = {
        "namespace": uid(cluster, "namespace", "team-a"),
        "queue": uid(cluster, "queues.scheduling.volcano.sh", "team-a"),
        "deployment": uid(cluster, "deployment", MODEL, "-n", "team-a"),
    }
    assert after == before, "an adopted object was recreated"
    queue = cluster.get_json("queues.scheduling.volcano.sh", "team-a")
    assert queue["spec"]["weight"] == 1
    deployment = cluster.get_json("deployment", MODEL, "-n", "team-a")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.33.0"
    managers = {entry["manager"] for entry in deployment["metadata"]["managedFields"]}
    assert any(m.startswith("pulumi-kubernetes") for m in managers), managers


def test_after_adoption_a_preview_shows_no_change(stack: PulumiStack) -> None:
    result = stack.preview("--expect-no-changes", check=False)
    assert result.returncode == 0, result.output[-4000:]
