"""`snapshot`: the recorded cluster a pull request's what-if reads, without what a workload may
hold in plain text, and answering the what-if as the full dump does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli.main import main
from tests.conftest import PROJECT_DIR

DUMP = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif" / "aicloud-a-preempt.yaml"


def _with_secrets_in_plain_text(tmp_path: Path) -> Path:
    data = yaml.safe_load(DUMP.read_text())
    for item in data["items"]:
        if item["kind"] in ("Pod", "Deployment", "LeaderWorkerSet"):
            item["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Apply"}]
            item["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
            spec = item["spec"] if item["kind"] == "Pod" else item["spec"].get("template", {}).get("spec", {})
            for container in spec.get("containers", []):
                container.update(command=["serve"], args=["--api-key=hunter2"], env=[{"name": "K", "value": "hunter2"}])
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_snapshot_leaves_out_what_a_workload_holds_in_plain_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _with_secrets_in_plain_text(tmp_path)
    assert "hunter2" in dump.read_text()
    out = tmp_path / "snapshot" / "aicloud-a.json"
    assert main(["snapshot", "--stack", "aicloud-a", "--from", str(dump), "--out", str(out)]) == 0
    recorded = json.loads(out.read_text())
    assert recorded["kind"] == "List"
    text = out.read_text()
    assert "hunter2" not in text and "managedFields" not in text and "last-applied-configuration" not in text
    pods = [i for i in recorded["items"] if i["kind"] == "Pod"]
    assert pods and all("resources" in c for p in pods for c in p["spec"]["containers"])
    assert f"-> {out}" in capsys.readouterr().out


def test_the_what_if_answers_the_same_on_the_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "aicloud-a.json"
    assert main(["snapshot", "--stack", "aicloud-a", "--from", str(DUMP), "--out", str(out)]) == 0
    capsys.readouterr()
    answers = []
    for source in (DUMP, out):
        main(["whatif", "--stack", "aicloud-a", "--from", str(source), "--engine", "model", "--json"])
        answers.append(json.loads(capsys.readouterr().out)["models"])
    assert answers[0] == answers[1]
    assert any(m["verdict"] != "fits" for m in answers[0]), "the scenario evicts: the comparison is not vacuous"
