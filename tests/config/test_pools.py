"""Node pools: models planned only on the pools they may use, pods that select and tolerate exactly
those pools, fabrics described by their labels' shape, and pools outside any fabric."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

import config
from components.inference.pod_template import pod_template
from tests.conftest import PROJECT_DIR, paths_of, problems_of, stack_raw

BAD = PROJECT_DIR / "tests" / "bad_configs" / "pool-model-names-unknown-pool.yaml"


def _base() -> dict[str, Any]:
    """The bad-config corpus' pool stack, made valid: an H100 pool on a 3-tier fabric (2 leaves of
    8), an autoscaled L40S pool outside it."""
    raw = yaml.safe_load(BAD.read_text())["config"]
    stack = {key.removeprefix("volcano-platform:"): value for key, value in raw.items()}
    stack["models"]["small"]["pools"] = ["l40s"]
    stack["tenants"]["team-a"]["queue"]["capability"]["nvidia.com/gpu"] = 512
    return stack


def _model(name: str, **fields: Any) -> dict[str, Any]:
    model = {
        "tenant": "team-a",
        "image": "vllm/vllm-openai:v0.33.0",
        "source": {"hub": {"id": "Qwen/Qwen3-8B"}},
        "resources": {"gpus": 1, "cpu": 4, "memory": "16Gi"},
        "priorityClass": "p2-normal",
    }
    model.update(fields)
    return {name: model}


def _load(stack: dict[str, Any]) -> config.PlatformSpec:
    return config.load_raw(stack, "cloud")


def test_a_model_pinned_to_a_pool_is_planned_only_on_it() -> None:
    stack = _base()
    stack["models"]["small"]["replicas"] = 20
    spec = _load(stack)
    placement = spec.placements["small"]
    # 8 L40S nodes of 4 GPUs at the pool's maximum; the 16 H100 nodes are not counted.
    assert placement.replicas_that_fit == 32
    assert spec.topology is not None
    assert set(placement.planned_gpus) <= {"l40s"}, placement.planned_gpus
    assert sum(placement.planned_gpus.values()) == 20


def test_a_model_pinned_to_a_pool_that_is_too_small_is_refused_at_its_replicas() -> None:
    stack = _base()
    stack["models"]["small"]["replicas"] = 33
    with pytest.raises(config.ConfigError) as error:
        _load(stack)
    assert [p.path for p in error.value.problems] == ["models.small.replicas"]
    assert "only 32 of 33" in error.value.problems[0].message


def test_a_hard_gang_goes_inside_one_leaf_of_its_pools_shape() -> None:
    stack = _base()
    stack["models"].update(
        _model(
            "big",
            pools=["h100"],
            nodesPerReplica=4,
            replicas=4,
            resources={"gpus": 8, "cpu": 32, "memory": "256Gi"},
            topology={"mode": "hard", "highestTier": 1},
        )
    )
    spec = _load(stack)
    placement = spec.placements["big"]
    assert placement.replicas_that_fit == 4  # 2 leaves of 8 nodes, 2 gangs of 4 each
    leaves = [d for d in placement.planned_gpus if spec.topology and spec.topology.domains[d].tier == 1]
    assert sorted(leaves) == ["h100/tier1-1", "h100/tier1-2"]
    stack["models"]["big"]["replicas"] = 5
    with pytest.raises(config.ConfigError) as error:
        _load(stack)
    assert [p.path for p in error.value.problems] == ["models.big.replicas"]


def test_a_hard_gang_on_a_pool_outside_any_fabric_is_refused() -> None:
    stack = _base()
    stack["models"].update(
        _model("gang", pools=["l40s"], nodesPerReplica=2, topology={"mode": "hard", "highestTier": 1})
    )
    with pytest.raises(config.ConfigError) as error:
        _load(stack)
    assert [p.path for p in error.value.problems] == ["models.gang.topology"]
    assert "(none in its pools)" in error.value.problems[0].message


def test_pods_select_and_tolerate_their_one_pool() -> None:
    stack = _base()
    stack["models"].update(_model("on-h100", pools=["h100"]))
    spec = _load(stack)
    pod = pod_template(spec.models["on-h100"], "server")["spec"]
    assert pod["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "h100"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Equal", "value": "true"}
    ]
    assert "affinity" not in pod
    l40s = pod_template(spec.models["small"], "server")["spec"]
    assert l40s["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "l40s"}
    assert "tolerations" not in l40s, "the L40S pool has no taint"


def test_pods_of_two_pools_with_nothing_in_common_get_one_affinity_term_per_pool() -> None:
    stack = _base()
    stack["models"]["small"]["pools"] = ["l40s", "h100"]
    spec = _load(stack)
    pod = pod_template(spec.models["small"], "server")["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "eks.amazonaws.com/nodegroup", "operator": "In", "values": [group]}]}
        for group in ("l40s", "h100")
    ]
    assert "nodeSelector" not in pod


def test_pods_of_two_pools_sharing_a_label_only_they_carry_select_by_it() -> None:
    stack = _base()
    for name, pool in stack["pools"].items():
        pool["selector"]["example.com/gpu-family"] = "datacenter" if name == "h100" else "inference"
    stack["pools"]["h100-b"] = copy.deepcopy(stack["pools"]["h100"])
    stack["pools"]["h100-b"]["selector"]["eks.amazonaws.com/nodegroup"] = "h100-b"
    stack["models"].update(_model("wide", pools=["h100", "h100-b"]))
    spec = _load(stack)
    pod = pod_template(spec.models["wide"], "server")["spec"]
    assert pod["nodeSelector"] == {"example.com/gpu-family": "datacenter"}
    assert spec.placements["wide"].replicas_that_fit == 2 * 16 * 8


def test_a_model_without_pools_runs_on_the_pools_its_selector_and_tolerations_allow() -> None:
    stack = _base()
    stack["models"].update(
        _model(
            "by-label",
            nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        )
    )
    spec = _load(stack)
    assert spec.models["by-label"].pools == ("h100",)
    # Without the toleration the tainted H100 pool is out, and the L40S pool does not carry the product.
    del stack["models"]["by-label"]["tolerations"]
    with pytest.raises(config.ConfigError) as error:
        _load(stack)
    assert [p.path for p in error.value.problems] == ["models.by-label.pools"]


def test_a_shape_stands_for_its_domains_and_its_labels_are_the_provisioners() -> None:
    spec = _load(_base())
    topology = spec.topology
    assert topology is not None
    assert topology.tiers[0] == "topology.k8s.aws/network-node-layer-3"
    assert [len(topology.at_tier(t)) for t in (1, 2, 3)] == [2, 1, 1]
    assert [d.node_count for d in topology.at_tier(1)] == [8, 8]
    assert topology.node_leaf == {}, "a shape names no node"
    assert spec.config.topology is not None and not spec.config.topology.node_labels.enabled
    assert [d.name for d in topology.roots] == ["h100", "l40s"]
    assert topology.total_gpus == 16 * 8 + 8 * 4


def test_the_cloud_example_checks_without_a_warning() -> None:
    from offline.render import render_stack

    result = render_stack(PROJECT_DIR, "aicloud-eks")
    assert result.spec.warnings == ()
    pods = [o.manifest for o in result.rendered.by_kind("Deployment")]
    assert pods and all(p["spec"]["template"]["spec"].get("nodeSelector") for p in pods)


def test_pools_without_any_topology_are_planned_and_drawn_apart(tmp_path: Any) -> None:
    from cli.main import main
    from tests.conftest import write_stack

    stack = _base()
    del stack["topology"]
    del stack["pools"]["h100"]["topology"]
    stack["models"]["small"]["replicas"] = 32
    spec = _load(stack)
    assert spec.placements["small"].replicas_that_fit == 32 and set(spec.placements["small"].planned_gpus) == {"l40s"}
    path = write_stack(tmp_path / "Pulumi.pools-only.yaml", stack)
    assert main(["render", "--stack", "pools-only", "--config-file", str(path), "--out", str(tmp_path / "out")]) == 0
    picture = (tmp_path / "out" / "topology.svg").read_text()
    assert 'data-name="h100"' in picture and 'data-name="l40s"' in picture
    assert "No network tiers" in (tmp_path / "out" / "summary.md").read_text()


@pytest.mark.parametrize(
    ("preset", "label"),
    [("aws", "`eks.amazonaws.com/nodegroup: <group>`"), ("gcp", "`cloud.google.com/gke-nodepool: <group>`")],
)
def test_a_fix_names_the_node_group_label_of_the_stacks_cloud(preset: str, label: str) -> None:
    stack = _base()
    stack["topology"]["preset"] = preset
    stack["pools"]["l40s"]["selector"] = dict(stack["pools"]["h100"]["selector"])
    with pytest.raises(config.ConfigError) as caught:
        _load(stack)
    (problem,) = [p for p in caught.value.problems if p.path == "pools.l40s.selector"]
    assert problem.fix == f"give each pool a label only its nodes carry, e.g. {label}"


def test_quotas_per_type_on_a_parent_tenant_are_refused_naming_its_children() -> None:
    """A type's quota is a child queue of the tenant that keeps it: on a parent it would be one
    more child beside the tenants under it."""
    raw = stack_raw("aicloud-eks")
    search = raw["tenants"]["search"]["queue"]
    raw["tenants"]["org"] = {
        "namespaces": [],
        "queue": {"capability": search["capability"], "deserved": search["deserved"], "byType": search.pop("byType")},
    }
    search["parent"] = "org"
    assert "tenants.org.queue.byType" in paths_of(raw)
    (problem,) = [p for p in problems_of(raw) if p.path == "tenants.org.queue.byType"]
    assert "tenant `org` is the parent of `search`" in problem.message and "`search`" in problem.fix
