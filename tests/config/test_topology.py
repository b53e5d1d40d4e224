"""Network topology: the domain tree, node labels, HyperNodes, placement feasibility, the picture."""

from __future__ import annotations

from typing import Any

import pytest

from config.spec.noderange import RangeError, expand
from config.spec.placement import shortages
from config.upstream.volcano import DISCOVERY_SOURCE_LABEL
from offline.schemas import validate_objects
from offline.summary import render_summary
from offline.svg import render_svg
from tests.conftest import load, mutate, new_warnings, paths_of, problems_of, stack_raw

SEED = stack_raw("aicloud-a")
LWS_MODEL = "qwen2-72b-tenanta"
LEAF, SPINE = "topology.aicloud/leaf-pair", "topology.aicloud/spine-pair"


def _topology(**changes: Any) -> Any:
    return lambda raw: raw["topology"].update(changes)


def _leaves(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["topology"]["domains"]["spinepair12"]["domains"]


def _hard(tier: int = 1, replicas: int = 1) -> Any:
    return lambda raw: raw["models"][LWS_MODEL].update(
        topology={"mode": "hard", "highestTier": tier}, replicas=replicas
    )


# -- node ranges ----------------------------------------------------------------------------------


def test_node_ranges() -> None:
    assert expand("gpu-worker-[1-3]") == ["gpu-worker-1", "gpu-worker-2", "gpu-worker-3"]
    assert expand("n[08-10]") == ["n08", "n09", "n10"]
    assert expand("rack[1-2]-gpu[1,3]") == ["rack1-gpu1", "rack1-gpu3", "rack2-gpu1", "rack2-gpu3"]
    assert expand("plain-node") == ["plain-node"]
    for bad in ("n[3-1]", "n[a-b]", "n[1-2", "n[1-200000]"):
        with pytest.raises(RangeError):
            expand(bad)


# -- node labels and HyperNodes ------------------------------------------------------------------


def test_seed_cluster_labels_every_node(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    patches = {o.name: o for o in result.rendered.objects if o.patch and o.kind == "Node"}
    assert len(patches) == 128
    assert patches["gpu-worker-1"].manifest["metadata"]["labels"] == {LEAF: "leafpair12", SPINE: "spinepair12"}
    assert patches["gpu-worker-64"].manifest["metadata"]["labels"][LEAF] == "leafpair12"
    assert patches["gpu-worker-65"].manifest["metadata"]["labels"] == {LEAF: "leafpair34", SPINE: "spinepair12"}
    assert patches["gpu-worker-128"].manifest["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    index = {e["urn"]: e for e in result.rendered.index}
    assert all(index[p.urn].get("retainOnDelete") is True for p in patches.values())


def test_discovery_mode_makes_no_hypernodes(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    assert result.rendered.by_kind("HyperNode") == []
    release = next(r for r in result.rendered.releases if r.data["release"] == "volcano")
    labels = release.data["values"]["custom"]["controller_config_override"]["networkTopologyDiscovery"][0]["config"][
        "networkTopologyTypes"
    ]["topologyA2"]
    assert [entry["nodeLabel"] for entry in labels] == [SPINE, LEAF, "kubernetes.io/hostname"]


def test_explicit_mode_makes_three_hypernodes(render_raw: Any) -> None:
    result = render_raw(mutate(SEED, _topology(hyperNodes="explicit")))
    nodes = {o.name: o.manifest for o in result.rendered.by_kind("HyperNode")}
    assert set(nodes) == {"spinepair12", "leafpair12", "leafpair34"}
    assert nodes["leafpair12"]["spec"] == {
        "tier": 1,
        "tierName": LEAF,
        "members": [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {LEAF: "leafpair12"}}}}],
    }
    assert nodes["spinepair12"]["spec"] == {
        "tier": 2,
        "tierName": SPINE,
        "members": [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "leafpair12"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "leafpair34"}}},
        ],
    }
    for manifest in nodes.values():
        assert DISCOVERY_SOURCE_LABEL not in manifest["metadata"].get("labels", {})
    release = next(r for r in result.rendered.releases if r.data["release"] == "volcano")
    assert "controller_config_override" not in release.data["values"]["custom"]
    index = {e["urn"].split("::")[-1]: e for e in result.rendered.index}
    spine_deps = index["topology-hypernode-spinepair12"]["dependsOn"]
    assert any(d.endswith("::volcano-release") for d in spine_deps)
    assert any(d.endswith("::topology-hypernode-leafpair12") for d in spine_deps)


def test_explicit_hypernodes_validate_against_the_crd_and_its_cel_rules(render_raw: Any) -> None:
    hypernodes = render_raw(mutate(SEED, _topology(hyperNodes="explicit"))).rendered.by_kind("HyperNode")
    report = validate_objects(hypernodes, "1.33")
    assert report.checked == 3 and report.issues == []


def test_none_mode_and_labels_off(render_raw: Any) -> None:
    result = render_raw(mutate(SEED, _topology(hyperNodes="none", nodeLabels={"enabled": False})))
    assert result.rendered.by_kind("HyperNode") == []
    assert not [o for o in result.rendered.objects if o.patch and o.kind == "Node"]
    release = next(r for r in result.rendered.releases if r.data["release"] == "volcano")
    assert "controller_config_override" not in release.data["values"]["custom"]
    assert any(w.path == "topology.hyperNodes" for w in result.spec.warnings)


def test_labels_can_be_stripped_on_removal(render_raw: Any) -> None:
    result = render_raw(mutate(SEED, _topology(nodeLabels={"retainOnDelete": False, "force": False})))
    patch = next(o for o in result.rendered.objects if o.patch and o.kind == "Node")
    entry = next(e for e in result.rendered.index if e["urn"] == patch.urn)
    assert "retainOnDelete" not in entry and "annotations" not in patch.manifest["metadata"]


THREE_TIERS = {
    "tiers": ["example.com/leaf", "example.com/spine", "example.com/zone"],
    "hyperNodes": "explicit",
    "domains": {
        "zone-a": {
            "domains": {
                "spine-1": {
                    "domains": {"leaf-1": {"nodes": ["a-[1-4]"]}, "leaf-2": {"nodes": ["b-[1-2]"], "gpusPerNode": 4}}
                },
                "spine-2": {
                    "gpusPerNode": 2,
                    "domains": {"leaf-3": {"nodes": ["c-1", {"names": "c-[2-3]", "gpus": 8}]}},
                },
            }
        },
    },
}


def test_three_tiers_and_uneven_leaves_from_config_alone(render_raw: Any) -> None:
    raw = mutate(SEED, lambda r: r.update(topology=THREE_TIERS))
    raw["models"][LWS_MODEL]["topology"] = {"mode": "hard", "highestTier": 2}
    raw["tenants"]["tenanta"]["queue"] = {}  # the seed's guarantees exceed this small cluster
    spec = load(raw)
    topology = spec.topology
    assert topology is not None
    assert [d.name for d in topology.at_tier(1)] == ["leaf-1", "leaf-2", "leaf-3"]
    assert {d.name: (d.node_count, d.gpus) for d in topology.domains.values()} == {
        "zone-a": (9, 32 + 8 + 2 + 16),
        "spine-1": (6, 40),
        "spine-2": (3, 18),
        "leaf-1": (4, 32),
        "leaf-2": (2, 8),
        "leaf-3": (3, 18),
    }
    assert topology.labels_of("c-2") == {
        "example.com/leaf": "leaf-3",
        "example.com/spine": "spine-2",
        "example.com/zone": "zone-a",
    }
    result = render_raw(raw)
    tiers = {o.name: o.manifest["spec"]["tier"] for o in result.rendered.by_kind("HyperNode")}
    assert tiers == {"zone-a": 3, "spine-1": 2, "spine-2": 2, "leaf-1": 1, "leaf-2": 1, "leaf-3": 1}
    assert len([o for o in result.rendered.objects if o.patch]) == 9 + 1  # nodes + the default queue


def test_domain_tree_rules() -> None:
    twice = mutate(SEED, lambda r: _leaves(r).update(spinepair12={"nodes": ["x-1"]}))
    assert "domain `spinepair12` is defined twice" in str(problems_of(twice)[0])
    deep = mutate(SEED, lambda r: _leaves(r)["leafpair12"].update(domains={"rack-1": {"nodes": ["r-1"]}}))
    assert "topology.domains.spinepair12.domains.leafpair12.domains" in paths_of(deep)
    shallow = mutate(SEED, lambda r: r["topology"]["domains"].update(lonely={"nodes": ["l-1"]}))
    paths = paths_of(shallow)
    assert "topology.domains.lonely.nodes" in paths and "topology.domains.lonely" in paths
    bad_name = mutate(SEED, lambda r: _leaves(r).update({"leaf_pair_": {"nodes": ["z-1"]}}))
    assert "topology.domains.spinepair12.domains.leaf_pair_" in paths_of(bad_name)
    hostname = mutate(SEED, _topology(tiers=["kubernetes.io/hostname", SPINE]))
    assert "topology.tiers" in paths_of(hostname)


def test_empty_leaf_is_a_warning() -> None:
    spec = load(mutate(SEED, lambda r: _leaves(r).update({"leafpair56": {}})))
    assert [w.path for w in new_warnings(spec)] == ["topology.domains.spinepair12.domains.leafpair56"]


def test_discovery_type_name_limit() -> None:
    raw = mutate(SEED, _topology(discovery={"typeName": "a-very-long-topology-type"}))
    assert paths_of(raw) == ["topology.discovery.typeName"]


# -- placement feasibility ------------------------------------------------------------------------


def test_two_nodes_of_eight_gpus_fit_a_leaf_of_the_seed_cluster() -> None:
    spec = load(mutate(SEED, _hard(1)))
    placement = spec.placements[LWS_MODEL]
    assert placement.fits and placement.mode == "hard" and placement.tier == 1
    assert placement.replicas_that_fit == 64  # 32 per leaf pair
    assert placement.planned_gpus == {"leafpair12": 16, "spinepair12": 16}


def test_hard_tier_fails_when_every_leaf_has_one_eight_gpu_node() -> None:
    raw = mutate(SEED, _hard(1))
    _leaves(raw)["leafpair12"]["nodes"] = ["gpu-worker-1", {"names": "gpu-worker-[2-64]", "gpus": 4}]
    _leaves(raw)["leafpair34"]["nodes"] = ["gpu-worker-65", {"names": "gpu-worker-[66-128]", "gpus": 4}]
    problem = next(p for p in problems_of(raw) if p.path == f"models.{LWS_MODEL}.topology")
    text = str(problem)
    assert "hard constraint at tier 1 (topology.aicloud/leaf-pair) cannot be met" in text
    assert "2 node(s) with 8 free GPU(s) each" in text
    assert "best domain `leafpair12` has room for only 1 such pod(s)" in text
    assert "highestTier" in problem.fix
    assert load(mutate(raw, _hard(2))).placements[LWS_MODEL].tier == 2  # one per leaf, same spine


def test_hard_replicas_count_against_room_per_domain() -> None:
    raw = mutate(SEED, lambda r: r["tenants"]["tenanta"]["queue"].update(capability={"mars-tech.com/gpu": 1040}))
    del raw["models"]["qwen8b-preemptor"]  # the 64 replicas take every node
    assert load(mutate(raw, _hard(1, replicas=64))).placements[LWS_MODEL].fits
    raw = mutate(raw, _hard(1, replicas=65))
    problem = next(p for p in problems_of(raw) if p.path == f"models.{LWS_MODEL}.replicas")
    assert "only 64 of 65 replica(s) fit domains at tier 1" in problem.message


def test_soft_mode_spill_is_a_warning_naming_the_tier() -> None:
    # Leaves of 41 nodes hold 20 two-node replicas each; the spine above them holds 41.
    raw = mutate(SEED, lambda r: r["models"][LWS_MODEL].update(replicas=41))
    del raw["models"]["qwen8b-preemptor"]  # the 41 replicas take every node
    raw["tenants"]["tenanta"]["queue"] = {}
    _leaves(raw)["leafpair12"]["nodes"] = ["gpu-worker-[1-41]"]
    _leaves(raw)["leafpair34"]["nodes"] = ["gpu-worker-[65-105]"]
    spec = load(raw)
    assert spec.placements[LWS_MODEL].tier == 2
    warning = next(w for w in spec.warnings if w.path == f"models.{LWS_MODEL}.topology")
    assert "spill to tier 2 (topology.aicloud/spine-pair)" in warning.message


def test_soft_mode_that_fits_leaves_has_no_warning() -> None:
    spec = load(SEED)
    assert spec.placements[LWS_MODEL].tier == 1 and new_warnings(spec) == []


def test_pods_larger_than_any_node() -> None:
    raw = mutate(SEED, lambda r: r["models"]["qwen8b-preemptor"]["resources"].update(gpus=16))
    raw["models"]["qwen8b-preemptor"]["engine"]["tensorParallelSize"] = 16
    problem = next(p for p in problems_of(raw) if p.path == "models.qwen8b-preemptor.resources.gpus")
    assert "largest node has 8" in problem.message


def test_queue_capability_limits_a_model() -> None:
    raw = mutate(
        SEED,
        lambda r: r["tenants"]["tenanta"]["queue"].update(
            capability={"mars-tech.com/gpu": 8}, deserved={"mars-tech.com/gpu": 8}, guarantee={"mars-tech.com/gpu": 8}
        ),
    )
    problem = next(p for p in problems_of(raw) if p.path == f"models.{LWS_MODEL}")
    assert "one replica needs 16 mars-tech.com/gpu but queue `tenanta` is capped at 8" in problem.message
    assert "tenants.tenanta.queue.capability[mars-tech.com/gpu]" in problem.fix


def test_queue_capability_counts_all_replicas() -> None:
    raw = mutate(SEED, lambda r: r["tenants"]["tenanta"]["queue"].update(capability={"mars-tech.com/gpu": 520}))
    raw["models"][LWS_MODEL]["replicas"] = 33
    problem = next(p for p in problems_of(raw) if p.path == f"models.{LWS_MODEL}.replicas")
    assert "33 replica(s) need 528 mars-tech.com/gpu" in problem.message


def test_models_together_over_a_queue_warn() -> None:
    raw = mutate(
        SEED,
        lambda r: r["tenants"]["tenanta"]["queue"].update(
            capability={"mars-tech.com/gpu": 16}, deserved={"mars-tech.com/gpu": 16}, guarantee={"mars-tech.com/gpu": 8}
        ),
    )
    spec = load(raw)
    assert [w.path for w in new_warnings(spec)] == ["tenants.tenanta.queue.capability"]


# -- picture and summary --------------------------------------------------------------------------


def test_models_fill_leaves_in_turn_and_short_leaves_are_flagged(committed_render: Any) -> None:
    """Three models that each fit a leaf alone, on two leaves of two nodes: two go to separate
    leaves, the third has no room left in any leaf: every leaf it may use is short, and so is the
    cluster for the single-node model that finds no GPU either. The render shows it (a warning);
    `check` refuses it."""
    raw = mutate(SEED, _hard(1))
    _leaves(raw)["leafpair12"]["nodes"] = ["gpu-worker-[1-2]"]
    _leaves(raw)["leafpair34"]["nodes"] = ["gpu-worker-[65-66]"]
    raw["tenants"] = {"tenanta": {"namespaces": ["a01"]}, "tenantb": {"namespaces": ["b01"]}}
    for name in ("second", "third"):
        raw["models"][name] = {**raw["models"][LWS_MODEL], "serviceName": f"{name}-leader"}
    spec = load(raw)
    assert spec.placements[LWS_MODEL].planned_gpus == {"leafpair12": 16, "spinepair12": 16}
    assert spec.placements["second"].planned_gpus == {"leafpair34": 16, "spinepair12": 16}
    assert spec.placements["third"].unplaced == 1 and spec.placements["third"].shortage_proven
    assert "SHORT" in render_svg(spec)
    summary = render_summary(spec, committed_render("aicloud-a").rendered)
    assert "| leafpair12 | 1 | spinepair12 | 2 | 16 | 16 | 0 | short |" in summary
    assert "| leafpair34 | 1 | spinepair12 | 2 | 16 | 16 | 0 | short |" in summary
    assert shortages(spec.placements.values()) == ["qwen8b-preemptor", "third"]
    warning = next(w for w in spec.warnings if w.path == "models.third.replicas")
    assert "cannot all run at once" in warning.message and "no arrangement" in warning.message


def test_a_provisioners_label_value_names_a_domain_where_the_stack_creates_no_hypernode() -> None:
    """Kubernetes takes `Block_A1` as a label value; only a HyperNode the stack creates of that
    name needs a DNS subdomain."""
    discovered = mutate(
        stack_raw("dev"),
        lambda r: r["topology"].update(
            hyperNodes="discovery",
            nodeLabels={"enabled": False},
            domains={"Block_A1": r["topology"]["domains"]["leaf-a"]},
        ),
    )
    assert [d.name for d in load(discovered).topology.named_domains] == ["Block_A1"]
    explicit = mutate(discovered, lambda r: r["topology"].update(hyperNodes="explicit"))
    assert "topology.domains.Block_A1" in paths_of(explicit)
    not_a_label = mutate(
        discovered, lambda r: r["topology"].update(domains={"a b": r["topology"]["domains"]["Block_A1"]})
    )
    assert any(p.startswith("topology.domains") for p in paths_of(not_a_label))
