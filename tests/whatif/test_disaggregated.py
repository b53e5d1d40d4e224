"""Prefill/decode slices placed by the plan and by both what-if engines, on the shapes of both example
clusters (aicloud-a: two leaf pairs of 64 nodes under one spine pair; aicloud-b: two leaves of 16 nodes
under one spine) and on two spines of two 4-node leaves, where slices compete for spines.

Each case says what the plan must conclude (it fits, a key refused, a warning) and, where the stack
renders, runs the what-if on an idle cluster of that shape with Volcano v1.15.1's own code and with
the model: both must place the same pods per slice, and where Volcano put them each role instance
must sit inside one leaf (its hard tier 1) and each slice inside one domain of its tier."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.scheduling.volcano_values import scheduler_conf_text
from config.errors import ConfigError
from live.cluster_state import state_from_objects
from offline.render import StackRender
from tests.conftest import load
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.predict import predict
from whatif.volcano.differential import model_result, volcano_results
from whatif.volcano.predict import cluster_objects
from whatif.volcano.runner import run_cases
from whatif.workload import build_world

pytestmark = pytest.mark.slow

GPU = "nvidia.com/gpu"
TIERS = ["example.com/leaf", "example.com/spine"]
SHAPES = {
    # name: spines -> leaves -> nodes per leaf
    "a": {"spine-pair-12": {"leaf-pair-12": 64, "leaf-pair-34": 64}},
    "b": {"spine-b1": {"leaf-b1": 16, "leaf-b2": 16}},
    "two-spines": {"spine-1": {"leaf-1": 4, "leaf-2": 4}, "spine-2": {"leaf-3": 4, "leaf-4": 4}},
}


def role(
    instances: int, nodes: int = 1, gpus: int = 8, tier: int | None = 1, peak: int | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "instances": instances,
        "nodesPerInstance": nodes,
        "resources": {"gpus": gpus, "cpu": 8, "memory": "64Gi"},
        "engine": {"tensorParallelSize": gpus, "pipelineParallelSize": nodes},
    }
    if tier is not None:
        out["topology"] = {"mode": "hard", "highestTier": tier}
    if peak is not None:
        out["autoscaling"] = {"minInstances": instances, "maxInstances": peak, "target": 4}
    return out


def nodes_of(shape: str) -> dict[str, tuple[str, str]]:
    """Node -> (leaf, spine), numbered through the shape."""
    out, number = {}, 0
    for spine, leaves in SHAPES[shape].items():
        for leaf, count in leaves.items():
            for _ in range(count):
                number += 1
                out[f"gpu-{number:03d}"] = (leaf, spine)
    return out


def stack(shape: str, slices: int, prefill: dict[str, Any], decode: dict[str, Any], **extra: Any) -> dict[str, Any]:
    nodes = nodes_of(shape)
    domains = {
        spine: {
            "domains": {leaf: {"nodes": sorted(n for n, (lf, _) in nodes.items() if lf == leaf)} for leaf in leaves}
        }
        for spine, leaves in SHAPES[shape].items()
    }
    model: dict[str, Any] = {
        "tenant": "search",
        "image": "vllm/vllm-openai:v0.33.0",
        "source": {"hub": {"id": "Qwen/Qwen3-235B-A22B"}},
        "resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"},
        "priorityClass": "p2-normal",
        "replicas": slices,
        "topology": extra.pop("slice_topology", {"mode": "hard", "highestTier": 2}),
        "roles": {"prefill": prefill, "decode": decode},
    }
    if prefill.get("autoscaling"):
        model["disaggregation"] = {"ratio": {"min": 0, "max": 100}}
    raw: dict[str, Any] = {
        "cluster": {"name": shape, "gpuResource": GPU, "gpusPerNode": 8, "helmReleaseStorage": "configmap"},
        "observability": {"enabled": bool(prefill.get("autoscaling") or decode.get("autoscaling"))},
        "topology": {"tiers": TIERS, "hyperNodes": "explicit", "domains": domains},
        "tenants": {"search": {"queue": {"capability": {GPU: 2048}}}},
        "models": {"pd": model, **extra.pop("models", {})},
    }
    return raw


FILLER = {
    "tenant": "search",
    "image": "vllm/vllm-openai:v0.33.0",
    "source": {"hub": {"id": "Qwen/Qwen3-32B"}},
    "resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"},
    "priorityClass": "p2-normal",
    "nodesPerReplica": 16,
    "engine": {"tensorParallelSize": 8, "pipelineParallelSize": 16},
    "topology": {"mode": "hard", "highestTier": 1},
}

OK = "ok"
SHORT = "models.pd.replicas"  # the joint plan's shortage warning
PEAK = "models.pd.roles.prefill.autoscaling.maxInstances"
FILLER_SHORT = "models.filler.replicas"  # slices are placed first: the other gang finds no leaf

# (id, shape, slices, prefill, decode, extra, what the plan concludes: OK, an error key, or a warning key)
CASES: list[tuple[str, str, int, dict[str, Any], dict[str, Any], dict[str, Any], str]] = [
    ("b-two-slices", "b", 2, role(2, gpus=4), role(1), {}, OK),
    ("b-decode-of-two-nodes", "b", 2, role(2, gpus=4), role(1, nodes=2), {}, OK),
    ("b-decode-a-whole-leaf", "b", 1, role(1, gpus=4), role(1, nodes=16), {}, OK),
    ("b-decode-wider-than-a-leaf", "b", 1, role(1, gpus=4), role(1, nodes=17), {}, "models.pd.roles.decode.topology"),
    ("b-prefill-wider-than-a-leaf", "b", 1, role(1, nodes=17), role(1), {}, "models.pd.roles.prefill.topology"),
    (
        "b-slice-per-leaf",
        "b",
        2,
        role(8),
        role(8),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        OK,
    ),
    (
        "b-three-slices-two-leaves",
        "b",
        3,
        role(8),
        role(8),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        "models.pd.replicas",
    ),
    ("b-prefill-grows-in-the-spine", "b", 1, role(1, gpus=4, peak=20), role(1), {}, OK),
    (
        "b-fits-at-min-not-at-max",
        "b",
        1,
        role(1, gpus=4, peak=40),
        role(1),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        PEAK,
    ),
    (
        "b-fits-at-neither",
        "b",
        2,
        role(9),
        role(9),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        "models.pd.topology",
    ),
    (
        "b-slices-and-a-gang-compete-for-leaves",
        "b",
        2,
        role(8),
        role(8),
        {"slice_topology": {"mode": "hard", "highestTier": 1}, "models": {"filler": FILLER}},
        FILLER_SHORT,
    ),
    ("b-instances-unconstrained", "b", 2, role(2, gpus=4, tier=None), role(1, tier=None), {}, OK),
    ("b-soft-slice", "b", 2, role(2, gpus=4), role(1), {"slice_topology": {"mode": "soft", "highestTier": 1}}, OK),
    ("a-two-slices", "a", 2, role(4), role(1, nodes=8), {}, OK),
    ("a-decode-a-whole-leaf-pair", "a", 1, role(1), role(1, nodes=63), {}, OK),
    (
        "a-slice-wider-than-a-leaf-pair",
        "a",
        1,
        role(1),
        role(1, nodes=64),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        "models.pd.topology",
    ),
    (
        "a-four-slices-two-per-leaf-pair",
        "a",
        4,
        role(16),
        role(2, nodes=8),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        OK,
    ),
    (
        "a-five-slices",
        "a",
        5,
        role(16),
        role(2, nodes=8),
        {"slice_topology": {"mode": "hard", "highestTier": 1}},
        "models.pd.replicas",
    ),
    ("a-prefill-from-zero", "a", 2, role(0, peak=2), role(1, nodes=2), {}, OK),
    ("two-spines-two-slices", "two-spines", 2, role(2, gpus=4), role(1), {}, OK),
    ("two-spines-slice-wider-than-a-leaf", "two-spines", 2, role(2, gpus=4), role(4), {}, OK),
    ("two-spines-three-slices", "two-spines", 3, role(2, gpus=4), role(4), {}, "models.pd.replicas"),
    (
        "two-spines-slices-compete-for-one-spine",
        "two-spines",
        2,
        role(1, gpus=4, peak=14),
        role(1),
        {},
        OK,
    ),
    (
        "two-spines-no-spine-holds-two-peaks",
        "two-spines",
        2,
        role(1, gpus=4, peak=15),
        role(1),
        {},
        PEAK,
    ),
    (
        "two-spines-decode-wider-than-a-leaf",
        "two-spines",
        1,
        role(1),
        role(1, nodes=5),
        {},
        "models.pd.roles.decode.topology",
    ),
]


def _plan(raw: dict[str, Any]) -> tuple[str, Any]:
    """What the plan concludes: OK, the key of its first error, or of its placement warning."""
    try:
        spec = load(raw)
    except ConfigError as error:
        return error.problems[0].path, None
    warnings = [p.path for p in spec.warnings if p.path in (SHORT, PEAK, FILLER_SHORT)]
    return (warnings[0] if warnings else OK), spec


@pytest.mark.parametrize(("case", "shape", "slices", "prefill", "decode", "extra", "expected"), CASES)
def test_the_plan_places_slices(
    case: str,
    shape: str,
    slices: int,
    prefill: dict[str, Any],
    decode: dict[str, Any],
    extra: dict[str, Any],
    expected: str,
) -> None:
    got, _ = _plan(stack(shape, slices, prefill, decode, **copy.deepcopy(extra)))
    assert got == expected, case


def _idle_nodes(shape: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, TIERS[0]: leaf, TIERS[1]: spine},
            },
            "status": {"allocatable": {"cpu": "128", "memory": "1000Gi", "pods": "110", GPU: "8"}},
        }
        for name, (leaf, spine) in nodes_of(shape).items()
    ]


RENDERED = [case for case in CASES if case[-1] in (OK, PEAK, FILLER_SHORT)]


@pytest.mark.parametrize(("case", "shape", "slices", "prefill", "decode", "extra", "expected"), RENDERED)
def test_both_engines_place_each_role_in_its_leaf_and_each_slice_in_its_domain(
    render_raw: Callable[..., StackRender],
    case: str,
    shape: str,
    slices: int,
    prefill: dict[str, Any],
    decode: dict[str, Any],
    extra: dict[str, Any],
    expected: str,
) -> None:
    raw = stack(shape, slices, prefill, decode, **copy.deepcopy(extra))
    render = render_raw(raw, stack=shape.replace("-", ""))
    state = state_from_objects(_idle_nodes(shape), case)
    _, _, objects = build_world(state, render.spec, render.rendered)
    snapshot = cluster_objects(state, render.spec, render.rendered, objects)
    text = scheduler_conf_text(render.spec)
    answer = run_cases([{"id": case, "conf": text, "defaults": True, "objects": snapshot, "cycles": 8, "repeat": 4}])[0]
    assert not answer.get("error"), answer.get("error")
    model = model_result(snapshot, yaml.safe_load(text))
    assert model in volcano_results(snapshot, answer), case
    where = nodes_of(shape)
    slice_tier = render.spec.models["pd"].highest_tier if raw["models"]["pd"]["topology"]["mode"] == "hard" else None
    for outcome in answer["outcomes"]:
        by_instance: dict[tuple[str, str], set[str]] = defaultdict(set)
        by_slice: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for uid, node in outcome["pods"].items():
            pod = next((p for p in snapshot if p.get("kind") == "Pod" and _uid(p) == uid), None)
            if (
                not node
                or pod is None
                or (pod["metadata"].get("labels") or {}).get("volcano-platform.io/model") != "pd"
            ):
                continue
            labels = pod["metadata"]["labels"]
            by_instance[
                (labels["leaderworkerset.sigs.k8s.io/name"], labels["leaderworkerset.sigs.k8s.io/group-index"])
            ].add(where[node][0])
            by_slice[labels["volcano-platform.io/slice"]].add(where[node])
        for instance, leaves in by_instance.items():
            assert len(leaves) == 1, f"{case}: instance {instance} spans {leaves}"
        for index, places in by_slice.items():
            tier_places = {leaf for leaf, _ in places} if slice_tier == 1 else {spine for _, spine in places}
            if slice_tier is not None:
                assert len(tier_places) == 1, f"{case}: slice {index} spans {tier_places}"
        if expected == OK:
            assert len(by_slice) == slices, f"{case}: {len(by_slice)} of {slices} slices placed"
    predict(state, render.spec, render.rendered)  # the model's report reads the same world


def _uid(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"


@pytest.fixture(scope="module", autouse=True)
def _engine() -> Path:
    return volcano_engine()
