"""The make targets around the tool: make turns any failure into its own exit 2, so each target
says the tool's exit code (and what it means) on standard error before failing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_DIR, require_tool

pytestmark = pytest.mark.slow  # runs make, which runs the tool

EKS_DUMP = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    make = require_tool(shutil.which("make"), "make")
    return subprocess.run([make, "-s", *args], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300)


def _said(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("make: volcano-platform exited")]
    return lines[-1] if lines else ""


def test_a_target_that_succeeds_says_nothing(tmp_path: Path) -> None:
    result = _make("check", "STACK=dev")
    assert (result.returncode, _said(result)) == (0, "")


def test_invalid_config_is_said_as_the_tools_2() -> None:
    result = _make("check", "STACK=bad", f"CONFIG={PROJECT_DIR / 'tests' / 'bad_configs' / 'pool-min-above-max.yaml'}")
    assert result.returncode == 2
    assert _said(result) == "make: volcano-platform exited 2 (invalid config, input or arguments)"


def test_findings_are_said_as_the_tools_1(tmp_path: Path) -> None:
    dump = yaml.safe_load(EKS_DUMP.read_text())
    node = next(
        n
        for n in dump["items"]
        if n["kind"] == "Node" and "topology.k8s.aws/network-node-layer-3" in n["metadata"]["labels"]
    )
    del node["metadata"]["labels"]["topology.k8s.aws/network-node-layer-3"]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    result = _make("preflight", "STACK=aicloud-eks", f"FROM={path}")
    assert result.returncode == 2, "make's own code"
    assert _said(result) == "make: volcano-platform exited 1 (findings or differences)"
    clean = _make("preflight", "STACK=aicloud-eks", f"FROM={EKS_DUMP}")
    assert (clean.returncode, _said(clean)) == (0, "")


def test_import_topology_of_labels_that_are_no_tree_is_said_as_1(tmp_path: Path) -> None:
    dump = yaml.safe_load(EKS_DUMP.read_text())
    nodes = [
        n
        for n in dump["items"]
        if n["kind"] == "Node" and n["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") == "h100-a"
    ]
    nodes[0]["metadata"]["labels"]["topology.k8s.aws/network-node-layer-2"] = "nn-elsewhere"  # a leaf under two spines
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    result = _make(
        "import-topology",
        "STACK=aicloud-a",
        "TIERS=topology.k8s.aws/network-node-layer-3,topology.k8s.aws/network-node-layer-2",
        f"FROM={path}",
    )
    assert _said(result) == "make: volcano-platform exited 1 (findings or differences)", result.stderr[-2000:]
