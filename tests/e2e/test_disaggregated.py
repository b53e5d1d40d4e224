"""Prefill and decode apart, for real: `pulumi up` of a model in two slices on 16 KWOK nodes of
8 GPUs in two spines of two 4-node leaves, HyperNodes created by the stack (`hyperNodes: explicit`),
the LeaderWorkerSets' pods made by the LWS controller and bound by Volcano's scheduler.

Each slice is one PodGroup held inside a spine (hard, tier 2) with a sub-group per role whose
instances are each held inside a leaf (hard, tier 1): two prefill instances and one decode instance
of two nodes each, six nodes per slice. A spine's 8 nodes hold one slice and not two, and a leaf's 4
nodes hold two instances. Without the constraints (measured with both `topology` keys removed) a
slice's pods were bound across both spines, so these assertions fail when the constraints do not
hold.

Before `up`, the what-if of the stack on the cluster as dumped, whose nodes do not yet carry the
stack's tier labels, must say the model fits with both engines.
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.platform_labels import SERVING_ROLE_LABEL, SLICE_LABEL
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR, TOOL
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import e2e_config

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2epd"
MODEL = "pd"
NAMESPACE = "team-a"
GPU = "nvidia.com/gpu"
LEAF = "example.com/leaf"
SPINE = "example.com/spine"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
SPINES = {"spine-1": ("leaf-1", "leaf-2"), "spine-2": ("leaf-3", "leaf-4")}
NODES_PER_LEAF = 4


def node_names() -> dict[str, tuple[str, str]]:
    """Node -> (leaf, spine)."""
    out: dict[str, tuple[str, str]] = {}
    for spine, leaves in SPINES.items():
        for leaf in leaves:
            for _ in range(NODES_PER_LEAF):
                out[f"gpu-{len(out) + 1:02d}"] = (leaf, spine)
    return out


def nodes() -> list[dict[str, Any]]:
    return [
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "8"}},
        }
        for name in node_names()
    ]


def role(instances: int) -> dict[str, Any]:
    return {
        "instances": instances,
        "nodesPerInstance": 2,
        "resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"},
        "engine": {"tensorParallelSize": 8, "pipelineParallelSize": 2},
        "topology": {"mode": "hard", "highestTier": 1},
    }


def pd_config(kubeconfig: Path) -> dict[str, Any]:
    """The dev stack on this cluster's shape, its model replaced by the two slices."""
    raw = e2e_config("dev", kubeconfig)
    raw["cluster"]["gpusPerNode"] = 8
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for name, (leaf, _) in node_names().items():
        by_leaf[leaf].append(name)
    raw["topology"] = {
        "tiers": [LEAF, SPINE],
        "hyperNodes": "explicit",
        "domains": {
            spine: {"domains": {leaf: {"nodes": by_leaf[leaf]} for leaf in leaves}} for spine, leaves in SPINES.items()
        },
    }
    raw["tenants"]["team-a"]["queue"] = {"capability": {GPU: 128}, "deserved": {GPU: 96}}
    raw["models"] = {
        MODEL: {
            "tenant": "team-a",
            "image": "vllm/vllm-openai:v0.33.0",
            "source": {"hub": {"id": "Qwen/Qwen3-235B-A22B"}},
            "servedModelName": "Qwen3-235B-A22B",
            "resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"},
            "priorityClass": "p2-normal",
            "replicas": 2,
            "topology": {"mode": "hard", "highestTier": 2},
            "roles": {"prefill": role(2), "decode": role(1)},
        }
    }
    return raw


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("pd-cluster"), real_programs, nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    return PulumiStack.create(cluster.folder / "project", STACK, pd_config(cluster.kubeconfig), real_programs)


@pytest.fixture(scope="module")
def predicted(cluster: LocalCluster, stack: PulumiStack) -> dict[str, dict[str, Any]]:
    """The what-if of the stack on the cluster before it is applied, by each engine: the model's
    verdict."""
    dump = cluster.dump(cluster.folder / "empty.json")
    verdicts = {}
    for engine in ("volcano", "model"):
        command = [*TOOL, "whatif", "--stack", STACK, "--config-file", str(stack.stack_file), "--from", str(dump),
                   "--engine", engine, "--json"]  # fmt: skip
        result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
        verdicts[engine] = next(v for v in json.loads(result.stdout)["models"] if v["model"] == MODEL)
    return verdicts


@pytest.fixture(scope="module")
def applied(stack: PulumiStack, predicted: dict[str, dict[str, Any]]) -> PulumiStack:
    stack.up()
    return stack


def running_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    pods = cluster.get_json("pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={MODEL}")["items"]
    return [p for p in pods if p["status"].get("phase") == "Running" and p["spec"].get("nodeName")]


def running_group(cluster: LocalCluster, name: str) -> dict[str, Any] | None:
    group: dict[str, Any] = cluster.get_json("podgroups.scheduling.volcano.sh", name, "-n", NAMESPACE)
    return group if group.get("status", {}).get("phase") == "Running" else None


def test_each_slice_runs_as_one_gang_in_a_spine_with_each_instance_in_a_leaf(
    cluster: LocalCluster, applied: PulumiStack
) -> None:
    expected = 2 * (2 * 2 + 1 * 2)  # slices x (prefill instances x nodes + decode instance x nodes)

    def all_running() -> list[dict[str, Any]]:
        pods = running_pods(cluster)
        return pods if len(pods) == expected else []

    pods = cluster.wait_for(all_running, 240, f"the {expected} pods of both slices to run")
    where = node_names()
    slices: dict[str, set[str]] = defaultdict(set)
    instances: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    gangs: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        labels = pod["metadata"]["labels"]
        leaf, spine = where[pod["spec"]["nodeName"]]
        key = (labels[SLICE_LABEL], labels[SERVING_ROLE_LABEL], labels[GROUP_INDEX])
        slices[labels[SLICE_LABEL]].add(spine)
        instances[key].add(leaf)
        gangs[labels[SLICE_LABEL]].add(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"])
        assert pod["spec"]["schedulerName"] == "volcano"

    assert sorted(slices) == ["0", "1"]
    assert all(len(spines) == 1 for spines in slices.values()), slices
    assert len(set().union(*slices.values())) == 2, f"the two slices share a spine: {slices}"
    assert len(instances) == 2 * 3, instances
    assert all(len(leaves) == 1 for leaves in instances.values()), instances
    assert {s: g for s, g in gangs.items()} == {"0": {f"{MODEL}-s0"}, "1": {f"{MODEL}-s1"}}

    for index in ("0", "1"):
        name = f"{MODEL}-s{index}"
        group = cluster.wait_for(lambda n=name: running_group(cluster, n), 60, f"PodGroup {name} to be Running")
        assert group["spec"]["minMember"] == 6
        policy = {p["name"]: p for p in group["spec"]["subGroupPolicy"]}
        assert {name: (p["subGroupSize"], p["minSubGroups"]) for name, p in policy.items()} == {
            "prefill": (2, 2),
            "decode": (2, 1),
        }


def test_both_whatif_engines_said_it_fits_before_it_was_applied(
    predicted: dict[str, dict[str, Any]], applied: PulumiStack
) -> None:
    assert {engine: v["verdict"] for engine, v in predicted.items()} == {"volcano": "fits", "model": "fits"}, predicted
    assert predicted["volcano"]["domain"] == predicted["model"]["domain"], predicted
