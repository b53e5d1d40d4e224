"""Importing the topology from the labels a cluster's nodes carry."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from config.spec.noderange import expand
from config.upstream.accelerators import type_of
from live.cluster_state import read_file
from live.topology_import import compact_ranges, import_topology
from tests.conftest import PROJECT_DIR, load, stack_raw, write_stack

FIXTURES = PROJECT_DIR / "tests" / "fixtures" / "cluster"
TIERS = ["topology.aicloud/leaf-pair", "topology.aicloud/spine-pair"]


@pytest.mark.parametrize(
    ("names", "patterns"),
    [
        ([f"gpu-worker-{i}" for i in range(1, 65)], ["gpu-worker-[1-64]"]),
        ([f"gpu-{i:03d}" for i in range(1, 129)], ["gpu-[001-128]"]),
        (["gpu-1", "gpu-2", "gpu-4", "gpu-9", "gpu-10"], ["gpu-[1-2,4,9-10]"]),
        (["rack1-node07"], ["rack1-node07"]),
        (["login", "gpu-3"], ["gpu-3", "login"]),
    ],
)
def test_names_become_compact_ranges(names: list[str], patterns: list[str]) -> None:
    assert compact_ranges(names) == patterns


@settings(max_examples=200, deadline=None)
@given(
    st.sets(
        st.tuples(
            st.sampled_from(["gpu-", "node", "rack1-n", "a"]),
            st.integers(min_value=0, max_value=1200),
            st.sampled_from([0, 2, 3, 4]),
            st.sampled_from(["", "-ib"]),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_compact_ranges_expand_back_to_exactly_the_names(parts: set[tuple[str, int, int, str]]) -> None:
    names = {f"{prefix}{str(number).zfill(width)}{suffix}" for prefix, number, width, suffix in parts}
    expanded = [name for pattern in compact_ranges(sorted(names)) for name in expand(pattern)]
    assert sorted(expanded) == sorted(names) and len(expanded) == len(names)


def test_the_hand_labelled_cluster_gives_the_example_stacks_topology() -> None:
    state = read_file(FIXTURES / "aicloud-a-handbuilt.yaml")
    imported = import_topology(state.nodes, TIERS, "mars-tech.com/gpu")
    assert imported.problems == [] and imported.unplaced == []
    expected = stack_raw("aicloud-a")["topology"]
    assert imported.section["tiers"] == expected["tiers"] and imported.section["gpusPerNode"] == 8
    assert imported.section["domains"] == expected["domains"]


def test_the_command_prints_a_section_to_paste(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["import-topology", "--stack", "aicloud-a", "--from", str(FIXTURES / "aicloud-a-handbuilt.yaml")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("  volcano-platform:topology:\n"), "indented to paste under `config:`"
    printed = yaml.safe_load("config:\n" + out)
    section = printed["config"]["volcano-platform:topology"]
    assert section["hyperNodes"] == "discovery" and section["tiers"] == TIERS
    assert section["domains"]["spinepair12"]["domains"]["leafpair34"] == {"nodes": ["gpu-worker-[65-128]"]}
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["topology"] == section and report["unplaced"] == []


def test_labels_that_do_not_form_a_tree_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = read_file(FIXTURES / "aicloud-a-handbuilt.yaml")
    nodes: list[dict[str, Any]] = copy.deepcopy(state.nodes)
    nodes[0]["metadata"]["labels"]["topology.aicloud/spine-pair"] = "spinepair34"  # leafpair12 under two spines
    del nodes[70]["metadata"]["labels"]["topology.aicloud/leaf-pair"]  # a GPU node missing its leaf
    imported = import_topology(nodes, TIERS, "mars-tech.com/gpu")
    assert any("`leafpair12` (tier 1" in p and "one parent" in p for p in imported.problems)
    assert imported.unplaced == ["gpu-worker-71"]
    dump = tmp_path / "nodes.yaml"
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    assert (
        main(["import-topology", "--tiers", ",".join(TIERS), "--from", str(dump), "--resource", "mars-tech.com/gpu"])
        == 1
    )
    err = capsys.readouterr().err
    assert "gpu-worker-71" in err and "one parent" in err


def test_a_node_group_with_other_gpu_counts_gets_its_own_count() -> None:
    state = read_file(FIXTURES / "aicloud-a-problems.yaml")
    imported = import_topology(state.nodes, TIERS, "mars-tech.com/gpu")
    assert not imported.problems
    leaf = imported.section["domains"]["spinepair12"]["domains"]["leafpair12"]
    assert {"names": "gpu-worker-7", "gpus": 4} in leaf["nodes"]  # gpu-worker-7 has 4 of 8
    raw = stack_raw("aicloud-a")
    raw["topology"] = {**raw["topology"], **imported.section}
    assert load(raw).topology.node_gpus["gpu-worker-7"] == 4  # type: ignore[union-attr]


def test_every_accelerator_node_left_out_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "status": {"allocatable": {"mars-tech.com/gpu": "8"}}}
    unlabelled = {**node, "metadata": {"name": "gpu-new-1"}}
    half = {**node, "metadata": {"name": "gpu-new-2", "labels": {TIERS[0]: "leafpair12"}}}
    cpu_only = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1"}}
    imported = import_topology([unlabelled, half, cpu_only], TIERS, "mars-tech.com/gpu")
    assert imported.unplaced == ["gpu-new-1", "gpu-new-2"]


def _labelled(count: int, per_leaf: int, leaves_per_spine: int) -> list[dict[str, Any]]:
    nodes = []
    for index in range(1, count + 1):
        leaf = (index - 1) // per_leaf + 1
        spine = (leaf - 1) // leaves_per_spine + 1
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"gpu-{index:03}",
                    "labels": {TIERS[0]: f"leaf-{leaf:02}", TIERS[1]: f"spine-{spine}"},
                },
                "status": {"allocatable": {"mars-tech.com/gpu": "8"}},
            }
        )
    return nodes


def test_a_regular_cluster_is_imported_as_a_fabric_that_expands_to_it() -> None:
    from config.sections.fabric import FabricConfig, expand_fabric

    imported = import_topology(_labelled(128, 8, 4), TIERS, "mars-tech.com/gpu")
    fabric = imported.section["fabric"]
    assert "domains" not in imported.section
    assert fabric == {
        "nodes": "gpu-{index:03}",
        "tiers": [{"name": "leaf-{index:02}", "size": 8}, {"name": "spine-{index}", "size": 4}],
        "count": 4,
    }
    tree = expand_fabric(FabricConfig.model_validate_json(json.dumps(fabric)))
    assert list(tree) == ["spine-1", "spine-2", "spine-3", "spine-4"]
    assert tree["spine-1"]["domains"]["leaf-01"]["nodes"] == ["gpu-[001-008]"]


def test_an_irregular_cluster_is_imported_explicitly() -> None:
    nodes = _labelled(128, 8, 4)[:-3]  # the last leaf is short
    imported = import_topology(nodes, TIERS, "mars-tech.com/gpu")
    assert "fabric" not in imported.section and imported.section["domains"]["spine-4"]["domains"]["leaf-16"] == {
        "nodes": ["gpu-[121-125]"]
    }


EKS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"


def test_the_cloud_cluster_imports_as_pools_that_render_the_example_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["import-topology", "--stack", "aicloud-eks", "--from", str(EKS), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    imported = json.loads(out)
    assert "ip-10-" not in out, "no node is named"
    assert imported["topology"] == {"preset": "aws", "hyperNodes": "discovery"}
    raw = stack_raw("aicloud-eks")
    raw["pools"], raw["topology"] = imported["pools"], imported["topology"]
    stack = write_stack(tmp_path / "Pulumi.imported.yaml", raw)
    assert main(["render", "--stack", "aicloud-eks", "--config-file", str(stack), "--out", str(tmp_path / "out")]) == 0
    golden = PROJECT_DIR / "tests" / "golden" / "aicloud-eks"
    for name in ("resources.yaml", "summary.json", "topology.svg"):
        assert (tmp_path / "out" / name).read_text() == (golden / name).read_text(), name


def test_a_cluster_with_no_stack_yet_is_imported_by_node_group(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["import-topology", "--preset", "aws", "--pools", "--from", str(EKS), "--json"])
    imported = json.loads(capsys.readouterr().out)
    assert code == 0
    pools = imported["pools"]
    assert sorted(pools) == ["h100-a", "h100-b", "l40s"], (
        "grouped by eks.amazonaws.com/nodegroup; system nodes left out"
    )
    assert pools["h100-a"]["topology"] == {"domains": [8, 2, 1], "nodesPerDomain": 8}
    assert pools["h100-b"]["topology"] == {"domains": [2, 1, 1], "nodesPerDomain": 8}, "what the labels say now"
    assert pools["l40s"] == {
        "selector": {"eks.amazonaws.com/nodegroup": "l40s"},
        "accelerator": {"count": 4, "product": "NVIDIA-L40S", "type": "l40s"},
        "nodes": 8,
    }
    assert pools["h100-a"]["accelerator"]["type"] == pools["h100-b"]["accelerator"]["type"] == "h100", (
        "two node groups of one product share the quotas per type"
    )
    assert pools["h100-a"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]


def _gke_node(name: str, pool: str, accelerator: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"cloud.google.com/gke-nodepool": pool, "cloud.google.com/gke-accelerator": accelerator},
        },
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
    }


def test_gke_nodes_give_their_pools_the_product_gke_labels_them_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GKE runs no GPU feature discovery: a node's product is its `cloud.google.com/gke-accelerator`."""
    nodes = [_gke_node(f"gke-a3-{i}", "a3-mega", "nvidia-h100-mega-80gb", 8) for i in range(2)]
    nodes += [_gke_node("gke-l4-0", "l4", "nvidia-l4", 1)]
    dump = tmp_path / "gke.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    code = main(["import-topology", "--preset", "gcp", "--pools", "--from", str(dump), "--json"])
    pools = json.loads(capsys.readouterr().out)["pools"]
    assert code == 0
    assert pools["a3-mega"]["accelerator"] == {"count": 8, "product": "nvidia-h100-mega-80gb", "type": "h100"}
    assert pools["l4"]["accelerator"] == {"count": 1, "product": "nvidia-l4", "type": "l4"}
    assert pools["l4"]["selector"] == {"cloud.google.com/gke-nodepool": "l4"}


@pytest.mark.parametrize(
    ("product", "short"),
    [
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("nvidia-h100-mega-80gb", "h100"),
        ("NVIDIA-L40S", "l40s"),
        ("nvidia-tesla-a100", "a100"),
        ("Tesla-V100-SXM2-16GB", "v100"),
        ("?!", None),
    ],
)
def test_the_type_a_product_is_called_by(product: str, short: str | None) -> None:
    assert type_of(product) == short
