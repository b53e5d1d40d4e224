"""Preflight of node pools on the cloud example: what the selectors find and whether the labels have
the declared shape. Instances are never compared by name, so replacing one changes nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from tests.conftest import PROJECT_DIR, stack_raw, write_stack

pytestmark = pytest.mark.slow  # renders and reads a 91-node cluster several times

FRESH = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"
LEAF = "topology.k8s.aws/network-node-layer-3"


def _dump() -> dict[str, Any]:
    return yaml.safe_load(FRESH.read_text())


def _group(dump: dict[str, Any], group: str) -> list[dict[str, Any]]:
    nodes = [n for n in dump["items"] if n["kind"] == "Node"]
    return [n for n in nodes if n["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") == group]


def _findings(tmp_path: Path, capsys: pytest.CaptureFixture[str], dump: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    code = main(["preflight", "--stack", "aicloud-eks", "--from", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    return code, {f["check"]: f for f in report["findings"]}


def test_the_cloud_example_meets_its_cluster_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, findings = _findings(tmp_path, capsys, _dump())
    assert (code, findings) == (0, {})


def test_an_instance_replaced_by_one_with_the_same_labels_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _dump()
    old = _group(dump, "h100-a")[5]
    new = copy.deepcopy(old)
    new["metadata"]["name"] = "ip-10-0-9-99.ec2.internal"
    new["metadata"]["labels"]["kubernetes.io/hostname"] = "ip-10-0-9-99.ec2.internal"
    new["spec"]["providerID"] = "aws:///us-east-1a/i-0fffffffffffffff9"
    dump["items"] = [new if n is old else n for n in dump["items"]]
    code, findings = _findings(tmp_path, capsys, dump)
    assert (code, findings) == (0, {})


def test_a_node_without_a_tier_label_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = _dump()
    node = _group(dump, "h100-a")[0]
    del node["metadata"]["labels"][LEAF]
    code, findings = _findings(tmp_path, capsys, dump)
    assert code == 1
    missing = findings["pool-tier-label-missing"]
    assert missing["severity"] == "error" and missing["subject"] == "pools.h100-a.topology"
    assert missing["details"] == [f"{node['metadata']['name']}: no `{LEAF}`"]


def test_a_leaf_with_fewer_nodes_than_declared_is_named_by_its_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _dump()
    gone = _group(dump, "h100-a")[0]
    dump["items"].remove(gone)
    code, findings = _findings(tmp_path, capsys, dump)
    assert code == 1
    leaf = gone["metadata"]["labels"][LEAF]
    assert findings["pool-domain-short"]["details"] == [f"{LEAF}={leaf}: 7 of 8 nodes"]
    assert "has 63 node(s), the stack says 64" in findings["pool-size"]["message"]


def test_an_autoscaled_pool_grown_part_way_is_its_normal_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _dump()
    dump["items"].remove(_group(dump, "h100-b")[0])  # 15 of 32: a leaf part-grown
    code, findings = _findings(tmp_path, capsys, dump)
    assert (code, findings) == (0, {})


def test_gpu_nodes_in_no_pool_and_undeclared_taints_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _dump()
    stray = copy.deepcopy(_group(dump, "l40s")[0])
    stray["metadata"]["name"] = "ip-10-0-9-1.ec2.internal"
    stray["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] = "a10g"
    dump["items"].append(stray)
    _group(dump, "l40s")[1]["spec"]["taints"] = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
    code, findings = _findings(tmp_path, capsys, dump)
    assert code == 1
    assert findings["nodes-outside-pools"]["details"] == ["ip-10-0-9-1.ec2.internal"]
    assert findings["pool-taints"]["details"] == ["maintenance=true:NoSchedule on 1 node(s)"]


def test_a_node_of_another_product_is_named_by_the_label_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPU feature discovery's label, or GKE's where a node has no other (GKE runs no feature
    discovery): either naming another product than the pool's is a `pool-product` warning."""
    dump = _dump()
    gfd, gke = _group(dump, "l40s")[:2]
    gfd["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-L4"
    del gke["metadata"]["labels"]["nvidia.com/gpu.product"]
    gke["metadata"]["labels"]["cloud.google.com/gke-accelerator"] = "nvidia-l4"
    code, findings = _findings(tmp_path, capsys, dump)
    assert code == 1
    assert findings["pool-product"]["details"] == [
        "cloud.google.com/gke-accelerator=nvidia-l4 on 1 node(s)",
        "nvidia.com/gpu.product=NVIDIA-L4 on 1 node(s)",
    ]


@pytest.mark.parametrize(
    ("selector", "hint"),
    [
        ({"eks.amazonaws.com/nodegroup": "l40"}, "did you mean `eks.amazonaws.com/nodegroup: l40s`?"),
        ({"eks.amazonaws.com/node-group": "l40s"}, "did you mean `eks.amazonaws.com/nodegroup: l40s`?"),
    ],
)
def test_a_selector_typo_is_an_error_with_the_label_it_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: dict[str, str], hint: str
) -> None:
    raw = stack_raw("aicloud-eks")
    raw["pools"]["l40s"]["selector"] = selector
    raw["pools"]["l40s"]["minNodes"] = 1
    del raw["tenants"]["search"]["queue"]["byType"]  # quotas per type need every pool's node-group label
    stack = write_stack(tmp_path / "Pulumi.typo.yaml", raw)
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(_dump()))
    code = main(["preflight", "--stack", "typo", "--config-file", str(stack), "--from", str(path), "--json"])
    findings = {f["check"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert code == 1
    finding = findings["pool-selects-nothing"]
    assert finding["severity"] == "error" and finding["subject"] == "pools.l40s.selector"
    assert finding["fix"] == hint
    assert "pool-size" not in findings


def test_a_node_two_pools_select_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = stack_raw("aicloud-eks")
    raw["pools"]["l40s"]["selector"] = {"node.kubernetes.io/instance-type": "g6e.12xlarge"}
    del raw["tenants"]["search"]["queue"]["byType"]  # quotas per type need every pool's node-group label
    stack = write_stack(tmp_path / "Pulumi.overlap.yaml", raw)
    dump = _dump()
    both = _group(dump, "h100-a")[3]
    both["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "g6e.12xlarge"
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    code = main(["preflight", "--stack", "overlap", "--config-file", str(stack), "--from", str(path), "--json"])
    findings = {f["check"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert code == 1
    assert findings["pool-overlap"]["details"] == [f"{both['metadata']['name']}: h100-a, l40s"]


def test_autoscaled_pools_without_an_autoscaler_are_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _dump()
    dump["items"] = [o for o in dump["items"] if o["kind"] != "Deployment"]
    code, findings = _findings(tmp_path, capsys, dump)
    assert code == 1
    assert "pools `h100-b`, `l40s` are autoscaled" in findings["autoscaler-missing"]["message"]


def test_pools_a_managed_autoscaler_scales_need_none_in_the_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GKE's cluster autoscaler runs in its managed control plane: `autoscaler: managed` pools are
    not an `autoscaler-missing` warning, and the report says who scales them."""
    raw = stack_raw("aicloud-eks")
    for pool in ("h100-b", "l40s"):
        raw["pools"][pool]["autoscaler"] = "managed"
    stack = write_stack(tmp_path / "Pulumi.managed.yaml", raw)
    dump = _dump()
    dump["items"] = [o for o in dump["items"] if o["kind"] != "Deployment"]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    code = main(["preflight", "--stack", "managed", "--config-file", str(stack), "--from", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["findings"]
    assert "autoscaler-missing" not in {f["check"] for f in report["findings"]}
    assert any("`h100-b`, `l40s` are scaled by the cloud's managed autoscaler" in n for n in report["notes"])


@pytest.mark.parametrize(("image", "name"), [("public.ecr.aws/karpenter/controller:1.6.0", "Karpenter")])
def test_the_autoscaler_found_is_named_with_what_it_does_for_gangs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], image: str, name: str
) -> None:
    dump = _dump()
    deployment = next(o for o in dump["items"] if o["kind"] == "Deployment")
    deployment["metadata"]["name"] = "karpenter"
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    code = main(["preflight", "--stack", "aicloud-eks", "--from", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    note = next(n for n in report["notes"] if "autoscaled pools" in n)
    assert f"with {name}" in note and "deepseek-v3: a scale-up may hold part of a gang" in note
