"""Weight claims: a claim a model mounts must exist or be created by the stack; preflight names a
missing one and the what-if says the model waits for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli.main import main
from tests.conftest import PROJECT_DIR, stack_raw, write_stack

pytestmark = pytest.mark.slow  # renders and reads a 91-node cluster several times

FRESH = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"


def _stack(tmp_path: Path, create: bool) -> Path:
    raw = stack_raw("aicloud-eks")
    if not create:
        del raw["models"]["llama-405b"]["source"]["pvc"]["create"]
    return write_stack(tmp_path / "Pulumi.claims.yaml", raw)


def _dump(tmp_path: Path, with_claim: bool) -> Path:
    dump = yaml.safe_load(FRESH.read_text())
    if with_claim:
        dump["items"].append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "llama-405b-weights", "namespace": "pretrain"},
                "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Ti"}}},
            }
        )
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_missing_claim_is_named_by_preflight_and_the_model_waits_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack, dump = _stack(tmp_path, create=False), _dump(tmp_path, with_claim=False)
    code, report = _run(capsys, "preflight", "--stack", "claims", "--config-file", str(stack), "--from", str(dump))
    assert code == 1
    missing = [f for f in report["findings"] if f["check"] == "claim-missing"]  # type: ignore[union-attr]
    assert [f["subject"] for f in missing] == ["models.llama-405b.source.pvc.claimName"]
    _, prediction = _run(
        capsys, "whatif", "--engine", "model", "--stack", "claims", "--config-file", str(stack), "--from", str(dump)
    )
    verdict = next(v for v in prediction["models"] if v["model"] == "llama-405b")  # type: ignore[union-attr]
    assert verdict["verdict"] == "waits"
    assert "claim `llama-405b-weights`, which does not exist in namespace `pretrain`" in verdict["reason"]


def test_a_claim_that_exists_or_that_the_stack_creates_is_no_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for stack, dump in (
        (_stack(tmp_path, create=False), _dump(tmp_path, with_claim=True)),
        (_stack(tmp_path, create=True), _dump(tmp_path, with_claim=False)),
    ):
        _, report = _run(capsys, "preflight", "--stack", "claims", "--config-file", str(stack), "--from", str(dump))
        assert not [f for f in report["findings"] if f["check"] == "claim-missing"]  # type: ignore[union-attr]
        _, prediction = _run(
            capsys, "whatif", "--engine", "model", "--stack", "claims", "--config-file", str(stack), "--from", str(dump)
        )
        verdict = next(v for v in prediction["models"] if v["model"] == "llama-405b")  # type: ignore[union-attr]
        assert verdict["verdict"] == "fits", verdict


def _storage_class(name: str, provisioner: str, default: bool = False) -> dict[str, object]:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": provisioner,
    }


def _access_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], classes: list[dict[str, object]], storage_class: str | None
) -> list[dict[str, str]]:
    raw = stack_raw("aicloud-eks")
    create = raw["models"]["llama-405b"]["source"]["pvc"]["create"]
    if storage_class is None:
        del create["storageClass"]
    else:
        create["storageClass"] = storage_class
    dump = yaml.safe_load(FRESH.read_text())
    dump["items"] += classes
    (tmp_path / "dump.yaml").write_text(yaml.safe_dump(dump))
    stack = write_stack(tmp_path / "Pulumi.claims.yaml", raw)
    main(
        ["preflight", "--stack", "claims", "--config-file", str(stack), "--from", str(tmp_path / "dump.yaml"), "--json"]
    )
    return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "claim-access-mode"]


def test_a_shared_claim_on_block_storage_is_named_by_preflight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The weights' claim asks for `ReadWriteMany` (every replica reads it): on FSx for Lustre that
    is provisioned; on EBS, the driver refuses it and the claim is never bound, also where the claim
    names no class and EKS's default one is EBS."""
    classes = [_storage_class("fsx-lustre", "fsx.csi.aws.com"), _storage_class("gp3", "ebs.csi.aws.com", default=True)]
    assert _access_findings(tmp_path, capsys, classes, "fsx-lustre") == []
    (named,) = _access_findings(tmp_path, capsys, classes, "gp3")
    assert named["severity"] == "error" and named["subject"] == "models.llama-405b.source.pvc.create.accessMode"
    assert "`ReadWriteMany` on StorageClass `gp3`, Amazon EBS (`ebs.csi.aws.com`)" in named["message"]
    (default,) = _access_findings(tmp_path, capsys, classes, None)
    assert "StorageClass `gp3` (the cluster's default)" in default["message"]
    assert _access_findings(tmp_path, capsys, [], None) == [], "no StorageClass recorded: nothing to say"
