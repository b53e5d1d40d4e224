"""`models.<m>.spread`: the pod topology spread constraint the stack renders, and both what-if
engines placing replicas by it (Kubernetes' `podtopologyspread` as Volcano's predicates and
nodeorder plugins run it). Four nodes of eight GPUs in one leaf; a model of three one-GPU replicas,
which binpacking alone puts on one node."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from live.cluster_state import ClusterState
from offline.render import StackRender
from tests.conftest import PROJECT_DIR, problems_of
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.predict import predict
from whatif.volcano.predict import predict_with_volcano

pytestmark = pytest.mark.slow  # renders stacks
BASE = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif" / "dev-full-candidate.yaml"
LEAF = "topology.example.com/leaf"


def stack(spread: dict[str, Any] | None, replicas: int = 3, gpus: int = 1) -> dict[str, Any]:
    raw = yaml.safe_load(BASE.read_text())["config"]
    raw = {key.split(":", 1)[1]: value for key, value in raw.items()}
    raw["cluster"]["gpusPerNode"] = 8
    model = copy.deepcopy(raw["models"]["steady"])
    model.update(replicas=replicas, resources={"gpus": gpus, "cpu": 4, "memory": "16Gi"})
    if spread is not None:
        model["spread"] = spread
    raw["models"] = {"svc": model}
    return raw


def cluster(full: tuple[str, ...] = ()) -> ClusterState:
    """The four nodes, those in `full` taken by a pod outside Volcano's work."""
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"dev-gpu-{n}", "labels": {"kubernetes.io/hostname": f"dev-gpu-{n}", LEAF: "leaf-a"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "8"}},
        }
        for n in range(1, 5)
    ]
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"busy-{name}", "namespace": "other", "uid": f"busy-{name}"},
            "spec": {
                "nodeName": name,
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}],
            },
            "status": {"phase": "Running"},
        }
        for name in full
    ]
    return ClusterState(nodes=nodes, pods=pods, source="spread test")


def placed(render: StackRender, state: ClusterState, engine: str) -> tuple[str, list[list[str]]]:
    if engine == "volcano":
        volcano_engine()
        verdict = predict_with_volcano(state, render.spec, render.rendered).verdicts[0]
    else:
        verdict = predict(state, render.spec, render.rendered).verdicts[0]
    return verdict.verdict, verdict.replicas


def constraints(render: StackRender) -> list[dict[str, Any]]:
    deployment = next(o.manifest for o in render.rendered.objects if o.kind == "Deployment" and o.name == "svc")
    return list(deployment["spec"]["template"]["spec"].get("topologySpreadConstraints", []))


def test_a_preferred_spread_renders_schedule_anyway_on_the_hostname_and_none_unless_asked(
    render_raw: Callable[..., StackRender],
) -> None:
    render = render_raw(stack({}), stack="dev")
    assert constraints(render) == [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "svc"}},
        }
    ]
    assert constraints(render_raw(stack(None), stack="dev")) == []


def test_required_spread_across_a_tier_renders_do_not_schedule_on_the_tier_label(
    render_raw: Callable[..., StackRender],
) -> None:
    [constraint] = constraints(render_raw(stack({"across": 1, "required": True}), stack="dev"))
    assert (constraint["topologyKey"], constraint["whenUnsatisfiable"]) == (LEAF, "DoNotSchedule")
    assert constraints(render_raw(stack({"across": "none"}), stack="dev")) == []


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_without_spread_binpack_stacks_the_replicas(render_raw: Callable[..., StackRender], engine: str) -> None:
    verdict, replicas = placed(render_raw(stack({"across": "none"}), stack="dev"), cluster(), engine)
    assert verdict == "fits"
    assert len({node for nodes in replicas for node in nodes}) == 1  # binpacked


@pytest.mark.parametrize("engine", ["model", "volcano"])
@pytest.mark.parametrize("spread", [{}, {"across": "node", "required": True}])
def test_spread_puts_each_replica_on_its_own_node(
    render_raw: Callable[..., StackRender], engine: str, spread: dict[str, Any] | None
) -> None:
    verdict, replicas = placed(render_raw(stack(spread), stack="dev"), cluster(), engine)
    assert verdict == "fits"
    assert sorted(len(nodes) for nodes in replicas) == [1, 1, 1]
    assert len({nodes[0] for nodes in replicas}) == 3


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_larger_replicas_pack_at_volcanos_weight_and_spread_at_a_higher_one(
    render_raw: Callable[..., StackRender], engine: str
) -> None:
    """Binpacking tells a half-full node from an empty one by about 400 for a four-GPU replica, more
    than spreading's 200 at weight 2: two replicas share a node, keeping whole nodes for gangs."""
    raw = stack({}, replicas=2, gpus=4)
    _, replicas = placed(render_raw(raw, stack="dev"), cluster(), engine)
    assert len({nodes[0] for nodes in replicas}) == 1
    raw["volcano"] = {"scheduler": {"spreadWeight": 10}}
    _, replicas = placed(render_raw(raw, stack="dev"), cluster(), engine)
    assert len({nodes[0] for nodes in replicas}) == 2


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_required_spread_waits_where_preferred_spread_doubles_up(
    render_raw: Callable[..., StackRender], engine: str
) -> None:
    """Two nodes full of other work are still domains with no replica: a third replica would be
    two above them, so `DoNotSchedule` refuses it while `ScheduleAnyway` puts it beside another."""
    state = cluster(full=("dev-gpu-3", "dev-gpu-4"))
    verdict, _ = placed(render_raw(stack({"across": "node", "required": True}), stack="dev"), state, engine)
    assert verdict == "waits"
    verdict, replicas = placed(render_raw(stack({}), stack="dev"), state, engine)
    assert verdict == "fits"
    assert sorted({nodes[0] for nodes in replicas}) == ["dev-gpu-1", "dev-gpu-2"]


def test_a_spread_tier_the_topology_lacks_or_a_spread_of_slices_is_refused_at_its_key() -> None:
    [problem] = problems_of(stack({"across": 2}))
    assert (problem.path, problem.message) == (
        "models.svc.spread.across",
        "tier 2 does not exist; the topology has 1 tier(s)",
    )


def test_a_multi_node_model_spreads_its_groups_by_their_leaders(render_raw: Callable[..., StackRender]) -> None:
    raw = stack({"across": 1})
    raw["models"]["svc"].update(
        nodesPerReplica=2, replicas=2, engine={"tensorParallelSize": 1, "pipelineParallelSize": 2}
    )
    render = render_raw(raw, stack="dev")
    lws = next(o.manifest for o in render.rendered.objects if o.kind == "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    [constraint] = template["leaderTemplate"]["spec"]["topologySpreadConstraints"]
    assert constraint["topologyKey"] == LEAF
    assert constraint["labelSelector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert "topologySpreadConstraints" not in template["workerTemplate"]["spec"]
    raw["models"]["svc"].pop("spread")
    assert render_raw(raw, stack="dev").spec.models["svc"].spread is None  # groups do not spread unless asked
