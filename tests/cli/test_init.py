"""`init`: a new cluster's stack, from answers or from a recorded cluster, that checks clean."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.main import main
from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.slow  # renders and checks each written stack

DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster"


def _init_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str], stack: str, *args: str) -> str:
    assert main(["init", "--stack", stack, "--dir", str(tmp_path), *args]) == 0
    capsys.readouterr()
    code = main(["check", "--stack", stack, "--config-file", str(tmp_path / f"Pulumi.{stack}.yaml")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"check passed for stack {stack}: 0 error(s), 0 warning(s)" in out.out + out.err
    return (tmp_path / f"Pulumi.{stack}.yaml").read_text()


def test_from_answers_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack_file = _init_and_check(tmp_path, capsys, "lab", "--tenant", "vision", "--tenant", "search")
    assert "clusters/lab/tenants/*.yaml" in stack_file
    assert sorted(p.name for p in (tmp_path / "clusters" / "lab" / "tenants").iterdir()) == [
        "search.yaml",
        "vision.yaml",
    ]
    owners = (tmp_path / ".github" / "CODEOWNERS").read_text().splitlines()
    assert "/clusters/lab/tenants/vision.yaml @your-org/vision" in owners, "the tenant team alone reviews its file"
    assert "pulumi config set --secret" in (tmp_path / "clusters" / "lab" / "README.md").read_text()
    assert "/clusters/lab/quotas.yaml @your-org/gpu-platform" in owners, "the platform team keeps the quotas"


def test_the_quota_stays_with_the_platform(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each tenant's share is in the platform's `quotas.yaml`; a team that raises its own share in
    its file is refused there, naming both files."""
    _init_and_check(
        tmp_path, capsys, "eksprod", "--from", str(DUMPS / "eks" / "aicloud-eks-fresh.yaml"), "--preset", "aws",
        "--tenant", "research", "--tenant", "batch",
    )  # fmt: skip
    folder = tmp_path / "clusters" / "eksprod"
    quotas = yaml.safe_load((folder / "quotas.yaml").read_text())["tenants"]
    assert quotas["research"]["queue"]["capability"] == {"nvidia.com/gpu": 672}, "every accelerator recorded"
    assert quotas["research"]["queue"]["deserved"] == {"nvidia.com/gpu": 336}, "an equal share each"
    research = folder / "tenants" / "research.yaml"
    assert yaml.safe_load(research.read_text()) == {"tenants": {"research": {}}}
    research.write_text("tenants:\n  research:\n    queue: {capability: {nvidia.com/gpu: 1000}}\n")
    code = main(["check", "--stack", "eksprod", "--config-file", str(tmp_path / "Pulumi.eksprod.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "clusters/eksprod/tenants/research.yaml: tenants.research.queue: written in clusters/eksprod/quotas.yaml" in err
    )


def test_from_a_recorded_cloud_cluster_its_pools_and_fabric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _init_and_check(
        tmp_path, capsys, "eksprod", "--from", str(DUMPS / "eks" / "aicloud-eks-fresh.yaml"), "--preset", "aws"
    )
    cluster = yaml.safe_load((tmp_path / "clusters" / "eksprod" / "cluster.yaml").read_text())
    assert sorted(cluster["pools"]) == ["h100-a", "h100-b", "l40s"]
    assert cluster["pools"]["h100-a"]["topology"] == {"domains": [8, 2, 1], "nodesPerDomain": 8}
    assert cluster["topology"] == {"preset": "aws", "hyperNodes": "discovery"}
    assert "ip-10-" not in (tmp_path / "clusters" / "eksprod" / "cluster.yaml").read_text(), "no instance named"


def test_from_a_hand_labelled_cluster_its_domains_and_its_volcano(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = _init_and_check(
        tmp_path,
        capsys,
        "onprem",
        "--from",
        str(DUMPS / "aicloud-a-handbuilt.yaml"),
        "--tiers",
        "topology.aicloud/leaf-pair,topology.aicloud/spine-pair",
    )
    config = yaml.safe_load(stack_file)["config"]
    assert config["volcano-platform:cluster"]["gpuResource"] == "mars-tech.com/gpu", "read from the nodes"
    assert config["volcano-platform:volcano"] == {"install": False}, "the running Volcano is left where it is"
    cluster = yaml.safe_load((tmp_path / "clusters" / "onprem" / "cluster.yaml").read_text())
    assert set(cluster["topology"]["domains"]) == {"spinepair12"}


def test_it_never_overwrites_and_adds_codeowners_lines_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--stack", "lab", "--dir", str(tmp_path)]) == 0
    assert main(["init", "--stack", "lab", "--dir", str(tmp_path)]) == 2
    assert "exist already" in capsys.readouterr().err
    owners = (tmp_path / ".github" / "CODEOWNERS").read_text().splitlines()
    assert len(owners) == len(set(owners)) == 3
