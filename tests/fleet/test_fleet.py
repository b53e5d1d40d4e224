"""The fleet file refused at its key, the gates' judgement of the commands' own JSON, the gate after
`up` on the objects as the cluster has them, and the report against its schema. The fleet run for
real, with the Automation API and three clusters, is `tests/e2e/test_fleet.py`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cli.exit import INVALID_INPUT
from cli.main import main
from fleet.fleet_file import FleetFileError, read_fleet
from fleet.gates import GateResult, Target, judge_preflight, judge_whatif
from fleet.report import as_json, markdown
from fleet.rollout import FAILED, NOT_STARTED, SUCCEEDED, FleetRun, StackOutcome
from fleet.workloads import Workload, not_serving, stack_workloads
from tests.conftest import PROJECT_DIR

DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster"


def write_fleet(folder: Path, document: Any, stacks: tuple[str, ...] = ("lab", "prod-eu", "prod-us")) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", folder / "Pulumi.yaml")
    for stack in stacks:
        shutil.copy(PROJECT_DIR / "Pulumi.dev.yaml", folder / f"Pulumi.{stack}.yaml")
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(FleetFileError) as raised:
        read_fleet(path)
    return [str(p) for p in raised.value.problems]


WAVES = [{"name": "lab", "stacks": ["lab"]}, {"name": "prod", "stacks": ["prod-eu", "prod-us"], "parallel": 2}]


def test_a_fleet_file_names_its_waves_in_order(tmp_path: Path) -> None:
    fleet = read_fleet(write_fleet(tmp_path, {"waves": WAVES, "gates": {"protectedTenants": ["team-a"]}}))
    assert fleet.stacks == ["lab", "prod-eu", "prod-us"]
    assert [w.parallel for w in fleet.waves] == [1, 2]
    assert fleet.wave_of("prod-us") == "prod" and fleet.project == tmp_path.resolve()
    assert fleet.stack_file("lab") == tmp_path.resolve() / "Pulumi.lab.yaml"


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"waves": [{"name": "lab", "stacks": ["lba"]}]}, "waves[0].stacks[0]: no stack file Pulumi.lba.yaml"),
        ({"waves": [{"name": "lab", "stacks": ["lba"]}]}, "did you mean `lab`?"),
        ({"waves": [*WAVES, {"name": "again", "stacks": ["lab"]}]}, "waves[2].stacks[0]: is already in wave `lab`"),
        ({"waves": [{"name": "lab", "stacks": []}]}, "waves[0].stacks: holds 0 entries"),
        ({"waves": []}, "waves: holds 0 entries"),
        ({"waves": [WAVES[0], {"name": "lab", "stacks": ["prod-eu"]}]}, "waves[1].name: names a wave twice"),
        ({"waves": [{"name": "Lab!", "stacks": ["lab"]}]}, "waves[0].name:"),
        ({"waves": [{"name": "lab", "stacks": ["lab"], "parallel": 0}]}, "waves[0].parallel:"),
        ({"waves": WAVES, "gates": {"overridable": ["check"]}}, "gates.overridable[0]: must be 'preflight'"),
        ({"waves": WAVES, "gate": {}}, "gate: unknown key `gate`; did you mean `gates`?"),
        ({"waves": WAVES, "project": "elsewhere"}, "project: `"),
        ("waves: [", "(fleet file): is not YAML"),
        ("- lab\n", "(fleet file): must be a mapping with `waves`"),
    ],
)
def test_a_bad_fleet_file_is_refused_at_its_key(tmp_path: Path, document: Any, expected: str) -> None:
    found = problems(write_fleet(tmp_path, document))
    assert any(expected in p for p in found), found


def test_a_bad_fleet_file_ends_the_command_with_exit_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_fleet(tmp_path, {"waves": [{"name": "lab", "stacks": ["lba"]}]})
    assert main(["fleet", "up", "--fleet", str(path)]) == INVALID_INPUT
    said = capsys.readouterr().err
    assert f"invalid fleet file {path}" in said and "waves[0].stacks[0]" in said


def test_an_override_the_fleet_file_does_not_allow_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_fleet(tmp_path, {"waves": WAVES, "gates": {"overridable": ["workloads"]}})
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert main(["fleet", "up", "--fleet", str(path), "--override", "whatif"]) == INVALID_INPUT
    assert "--override whatif: the fleet file does not let this gate be overridden" in capsys.readouterr().err


def test_a_protected_tenant_protects_its_sub_teams_queues(tmp_path: Path) -> None:
    document = {"project": str(PROJECT_DIR), "waves": [{"name": "eks", "stacks": ["aicloud-eks"]}],
                "gates": {"protectedTenants": ["research"]}}  # fmt: skip
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(document))
    target = Target.of(read_fleet(tmp_path / "fleet.yaml"), "aicloud-eks")
    assert {"research", "alignment", "pretrain"} <= target.protected_queues
    assert "inference" not in target.protected_queues


def whatif_models(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The real `whatif --json` of the example cluster where a model preempts a lower-priority gang."""
    main(["whatif", "--stack", "aicloud-a", "--from", str(DUMPS / "whatif" / "aicloud-a-preempt.yaml"), "--json"])
    models: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["models"]
    return models


def test_the_whatif_gate_stops_an_eviction_of_a_protected_tenant(capsys: pytest.CaptureFixture[str]) -> None:
    models = whatif_models(capsys)
    victims = [v for m in models for v in m["victims"]]
    assert victims, models
    assert judge_whatif(models, frozenset(), "aicloud-a").passed
    stopped = judge_whatif(models, frozenset({victims[0]["queue"]}), "aicloud-a")
    assert not stopped.passed
    assert f"PodGroup {victims[0]['namespace']}/{victims[0]['podGroup']} of protected queue" in stopped.said
    never = [{**models[0], "verdict": "never", "reason": "no node has 16 GPUs"}, *models[1:]]
    refused = judge_whatif(never, frozenset(), "aicloud-a")
    assert not refused.passed and "can never be placed: no node has 16 GPUs" in refused.said
    assert refused.fix == f"volcano-platform explain {models[0]['model']} --stack aicloud-a"


def test_the_preflight_gate_fails_on_an_error_and_counts_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    main(["preflight", "--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-problems.yaml"), "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    errors = [f for f in findings if f["severity"] == "error"]
    failed = judge_preflight(findings)
    assert not failed.passed and failed.said.startswith(f"{len(errors)} error(s): {errors[0]['check']}")
    assert failed.fix == errors[0]["fix"]
    warnings = [f for f in findings if f["severity"] == "warning"]
    assert judge_preflight(warnings).said == f"no error ({len(warnings)} warning(s))"


def test_the_gate_after_up_reads_each_kind_as_its_controller_says_it() -> None:
    gang = Workload("PodGroup", "team-a", "wide")
    pending = {"spec": {"minMember": 4}, "status": {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
         "message": "4/4 tasks in gang unschedulable"}]}}  # fmt: skip
    assert not_serving(gang, pending) == (
        "phase Pending; Unschedulable (NotEnoughResources): 4/4 tasks in gang unschedulable"
    )
    assert not_serving(gang, {"spec": {"minMember": 4}, "status": {"phase": "Running"}}) is None
    assert not_serving(gang, None) == "not found on the cluster"
    deployment = Workload("Deployment", "team-a", "chat")
    assert not_serving(deployment, {"spec": {"replicas": 2}, "status": {"availableReplicas": 1}}) == (
        "1 of 2 replicas available"
    )
    assert not_serving(deployment, {"spec": {"replicas": 0}, "status": {}}) is None
    lws = Workload("LeaderWorkerSet", "team-a", "wide")
    available = {"spec": {"replicas": 1}, "status": {"conditions": [{"type": "Available", "status": "True"}]}}
    assert not_serving(lws, available) is None
    assert not_serving(lws, {"spec": {"replicas": 1}, "status": {}}) == "not Available (0 of 1 groups ready)"


def test_the_stacks_workloads_come_from_its_state() -> None:
    resources = [
        {"type": "kubernetes:apps/v1:Deployment", "outputs": {"metadata": {"name": "chat", "namespace": "team-a"}}},
        {
            "type": "kubernetes:scheduling.volcano.sh/v1beta1:PodGroup",
            "inputs": {"metadata": {"name": "wide", "namespace": "team-a"}},
        },
        {"type": "kubernetes:core/v1:Service", "outputs": {"metadata": {"name": "chat", "namespace": "team-a"}}},
        {"type": "pulumi:pulumi:Stack"},
    ]
    assert stack_workloads(resources) == [
        Workload("Deployment", "team-a", "chat"),
        Workload("PodGroup", "team-a", "wide"),
    ]


def test_the_report_says_which_stack_stopped_the_fleet_and_validates() -> None:
    stopped = StackOutcome("lab", "lab", "up", FAILED, changes={"create": 3}, seconds=61.5, error="error: timed out")
    stopped.gates = [
        GateResult("check", True, "passed"),
        GateResult("whatif", False, "x evicts y", overridden=True),
        GateResult("workloads", False, "PodGroup team-a/wide: phase Pending", "volcano-platform explain wide"),
    ]
    run = FleetRun("up", [stopped, StackOutcome("prod-eu", "prod", "none", NOT_STARTED)], "lab", ("whatif",))
    text = markdown(run)
    assert "| lab | lab | check ok, whatif overridden, workloads FAILED | 3 create | 61.5 s | failed |" in text
    assert "| prod-eu | prod | - | - | - | not started |" in text
    assert "gate `workloads` failed: PodGroup team-a/wide: phase Pending; volcano-platform explain wide" in text
    assert "gate `whatif` failed and was overridden (recorded): x evicts y" in text
    assert "The fleet stopped after the wave of `lab`; untouched: prod-eu." in text
    document = json.loads(as_json(run))
    jsonschema.validate(document, json.loads((PROJECT_DIR / "schema" / "fleet.schema.json").read_text()))
    assert document["ok"] is False and document["stoppedBy"] == "lab"
    assert FleetRun("up", [StackOutcome("a", "w", "up", SUCCEEDED)]).ok


@pytest.mark.slow
def test_the_fleet_whatif_ranks_the_clusters_as_their_schedulers_would_place_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three clusters of the example's shape, recorded: one empty, one where the model evicts a
    lower-priority gang, one where it waits; each answered by its own what-if."""
    recorded = {
        "busy": DUMPS / "whatif" / "aicloud-a-waits.yaml",
        "crowded": DUMPS / "whatif" / "aicloud-a-preempt.yaml",
        "empty": DUMPS / "aicloud-a-fresh.yaml",
    }
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    for stack in recorded:
        shutil.copy(PROJECT_DIR / "Pulumi.aicloud-a.yaml", tmp_path / f"Pulumi.{stack}.yaml")
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump({"waves": [{"name": "all", "stacks": sorted(recorded)}]}))
    given = [f"--from={stack}={dump}" for stack, dump in recorded.items()]
    args = ["fleet", "whatif", "--fleet", str(tmp_path / "fleet.yaml"), "--model", "qwen2-72b-tenanta", *given]
    assert main([*args, "--json"]) == 0
    clusters = json.loads(capsys.readouterr().out)["clusters"]
    assert [(c["stack"], c["verdict"]) for c in clusters] == [
        ("empty", "fits"),
        ("crowded", "fits-after-eviction"),
        ("busy", "waits"),
    ]
    assert clusters[1]["victims"] and clusters[2]["reason"]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "| 1 | empty | all | fits | - |" in table and "| 3 | busy | all | waits | - |" in table
    assert main([*args, "--model", "nowhere"]) == INVALID_INPUT
    assert "no stack of the fleet has a model 'nowhere'" in capsys.readouterr().err
    assert main([*args, "--from", "elsewhere=x.json"]) == INVALID_INPUT
    capsys.readouterr()
    assert main([*args, f"--from=busy={tmp_path / 'missing.json'}"]) == INVALID_INPUT
    assert "stack busy: error:" in capsys.readouterr().err
