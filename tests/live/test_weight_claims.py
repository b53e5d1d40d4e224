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
