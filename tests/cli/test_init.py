"""`init`: a new cluster's stack, from answers or from a recorded cluster, that checks clean."""

from __future__ import annotations

import json
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


GKE_DUMP = DUMPS / "gke" / "gke-a3-mega-fresh.yaml"
RESEARCH_405B = """\
models:
  llama-405b:
    pools: [a3-mega]
    image: vllm/vllm-openai:v0.33.0
    source: {hub: {id: meta-llama/Llama-3.1-405B-Instruct}}
    priorityClass: p2-normal
    nodesPerReplica: 2
    resources: {gpus: 8, cpu: 96, memory: 1000Gi}
    topology: {mode: hard, highestTier: 2}
    engine: {tensorParallelSize: 8, pipelineParallelSize: 2}
"""
BATCH_ON = """\
models:
  summarize:
    pools: [{pool}]
    image: vllm/vllm-openai:v0.33.0
    source: {{hub: {{id: Qwen/Qwen3-8B}}}}
    priorityClass: p3-low
    resources: {{gpus: 1, cpu: 8, memory: 32Gi}}
"""


def _check_gke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", "--stack", "gkeprod", "--config-file", str(tmp_path / "Pulumi.gkeprod.yaml")])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_gke_cluster_from_its_dump_checks_and_meets_the_cluster_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Day one on GKE: `init` from a dump of A3 Mega nodes in a compact-placement block and an L4
    pool writes pools GKE's own labels describe; with the L4 pool scaled by GKE's autoscaler and a
    multi-node model inside one sub-block, `check` and `preflight` find nothing; a tenant file that
    raises its share, or moves its model onto a pool the platform keeps it off, is refused in that
    file."""
    _init_and_check(tmp_path, capsys, "gkeprod", "--from", str(GKE_DUMP), "--preset", "gcp",
                    "--tenant", "research", "--tenant", "batch")  # fmt: skip
    folder = tmp_path / "clusters" / "gkeprod"
    cluster = yaml.safe_load((folder / "cluster.yaml").read_text())
    a3, l4 = cluster["pools"]["a3-mega"], cluster["pools"]["l4"]
    assert a3["selector"] == {"cloud.google.com/gke-nodepool": "a3-mega"}
    assert a3["accelerator"] == {"count": 8, "product": "nvidia-h100-mega-80gb", "type": "h100"}
    assert a3["topology"] == {"domains": [16, 2, 1], "nodesPerDomain": 1}, "a host is one node; a sub-block eight"
    assert a3["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert l4["accelerator"]["type"] == "l4"
    # GKE's autoscaler runs in its control plane: the platform team declares the bounds and who scales.
    del l4["nodes"]
    l4 |= {"minNodes": 1, "maxNodes": 8, "autoscaler": "managed"}
    # Cross-node traffic over A3 Mega's eight GPU NICs, not the host NIC.
    a3["network"] = {"profile": "gpudirect-tcpxo", "interfaces": [f"gpu-nic{i}" for i in range(8)]}
    (folder / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    quotas = yaml.safe_load((folder / "quotas.yaml").read_text())
    assert quotas["tenantPolicy"]["tenants"]["batch"]["pools"] == ["a3-mega", "l4"], "every pool, listed to narrow"
    quotas["tenantPolicy"]["tenants"]["batch"]["pools"] = ["l4"]
    (folder / "quotas.yaml").write_text(yaml.safe_dump(quotas))
    stack = yaml.safe_load((tmp_path / "Pulumi.gkeprod.yaml").read_text())
    stack["config"] |= {
        "volcano-platform:lws": {"install": True},
        "volcano-platform:volcano": {"scheduler": {"eviction": "gang"}},
    }
    (tmp_path / "Pulumi.gkeprod.yaml").write_text(yaml.safe_dump(stack))
    (folder / "tenants" / "research.yaml").write_text("tenants:\n  research: {}\n" + RESEARCH_405B)
    batch = folder / "tenants" / "batch.yaml"
    batch.write_text("tenants:\n  batch: {}\n" + BATCH_ON.format(pool="l4"))

    code, out = _check_gke(tmp_path, capsys)
    assert code == 2, "TCPXO's daemon needs more than the `baseline` level research's namespaces enforce"
    assert "clusters/gkeprod/tenants/research.yaml: models.llama-405b.pools" in out, out
    quotas["tenantPolicy"]["tenants"]["research"]["podSecurity"] = "privileged"
    (folder / "quotas.yaml").write_text(yaml.safe_dump(quotas))
    code, out = _check_gke(tmp_path, capsys)
    assert code == 0, out
    assert "0 error(s), 0 warning(s)" in out
    code = main(["preflight", "--stack", "gkeprod", "--config-file", str(tmp_path / "Pulumi.gkeprod.yaml"),
                 "--from", str(GKE_DUMP), "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["findings"] == [], "no false finding on GKE"
    assert any("`l4` are scaled by the cloud's managed autoscaler" in note for note in report["notes"])
    # Two A3 Mega nodes without the TCPXO plugin's installer: the 405B model's pods would fail there.
    dump = yaml.safe_load(GKE_DUMP.read_text())
    gone = {"nccl-tcpxo-installer-00000", "nccl-tcpxo-installer-00001"}
    dump["items"] = [o for o in dump["items"] if o["metadata"]["name"] not in gone]
    (tmp_path / "dump.yaml").write_text(yaml.safe_dump(dump))
    code = main(["preflight", "--stack", "gkeprod", "--config-file", str(tmp_path / "Pulumi.gkeprod.yaml"),
                 "--from", str(tmp_path / "dump.yaml"), "--json"])  # fmt: skip
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["check"], finding["subject"]) == ("network-plugin-missing", "pools.a3-mega.network")
    assert code == 1 and len(finding["details"]) == 2

    batch.write_text("tenants:\n  batch: {}\n" + BATCH_ON.format(pool="a3-mega"))
    code, out = _check_gke(tmp_path, capsys)
    assert code == 2
    assert "clusters/gkeprod/tenants/batch.yaml: models.summarize.pools" in out, out
    assert "tenantPolicy.tenants.batch.pools" in out

    batch.write_text(
        "tenants:\n  batch:\n    queue: {capability: {nvidia.com/gpu: 128}}\n" + BATCH_ON.format(pool="l4")
    )
    code, out = _check_gke(tmp_path, capsys)
    assert code == 2
    assert "clusters/gkeprod/tenants/batch.yaml: tenants.batch.queue: written in clusters/gkeprod/quotas.yaml" in out
