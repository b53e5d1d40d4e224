"""The deploy workflow written from a fleet file (`fleet workflow`): a job per wave in order, each in
its wave's environment, its legs the wave's stacks; and the options that limit a fleet run to the
stacks a workflow leg owns. The repository's own deploy.yml is held to its fleet.yaml, and both are
linted, in tests/project/test_workflows.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from cli.exit import INVALID_INPUT, OK
from cli.main import main
from fleet.fleet_file import read_fleet
from tests.fleet.test_fleet import problems, write_fleet

THREE_WAVES = [
    {"name": "lab", "stacks": ["lab"]},
    {"name": "canary", "stacks": ["prod-eu"], "environment": "production"},
    {"name": "prod", "stacks": ["prod-us", "prod-ap"], "parallel": 2, "environment": "production"},
]
STACKS = ("lab", "prod-eu", "prod-us", "prod-ap")


def workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str], waves: list[dict[str, object]]) -> str:
    write_fleet(tmp_path, {"waves": waves}, STACKS)
    assert main(["fleet", "workflow", "--fleet", "fleet.yaml"]) == OK
    return capsys.readouterr().out


def test_each_wave_is_a_job_that_needs_the_one_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = workflow(tmp_path, capsys, THREE_WAVES)
    jobs = yaml.safe_load(text)["jobs"]
    assert list(jobs) == ["wave-lab", "wave-canary", "wave-prod"]
    assert [job.get("needs") for job in jobs.values()] == [None, "wave-lab", "wave-canary"]
    assert [job["environment"] for job in jobs.values()] == ["lab", "production", "production"]
    assert [job["strategy"]["max-parallel"] for job in jobs.values()] == [1, 1, 2]
    assert jobs["wave-prod"]["strategy"]["matrix"]["include"] == [
        {"stack": "prod-us", "kubeconfig": "KUBECONFIG_PROD_US"},
        {"stack": "prod-ap", "kubeconfig": "KUBECONFIG_PROD_AP"},
    ]
    assert "# v4.4.0" in text, "each action's version stays beside its pin"
    assert "fleet.yaml` (`make deploy-workflow`)" in text.splitlines()[0]


def test_stacks_whose_secrets_would_collide_are_refused_at_their_key(tmp_path: Path) -> None:
    from fleet.workflow import deploy_workflow

    write_fleet(tmp_path, {"waves": [{"name": "lab", "stacks": ["prod-eu", "prod_eu"]}]}, ("prod-eu", "prod_eu"))
    fleet = read_fleet(tmp_path / "fleet.yaml")
    with pytest.raises(Exception) as raised:
        deploy_workflow(fleet, "fleet.yaml", "3.0.0")
    assert "waves[0].stacks[1]: would use the secret KUBECONFIG_PROD_EU of stack `prod-eu`" in str(raised.value)


def test_a_stack_name_that_could_reach_a_shell_is_refused(tmp_path: Path) -> None:
    found = problems(write_fleet(tmp_path, {"waves": [{"name": "lab", "stacks": ['x"$(id)']}]}))
    assert any(p.startswith("waves[0].stacks[0]:") for p in found), found


def test_an_absolute_fleet_path_is_refused_for_the_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_fleet(tmp_path, {"waves": THREE_WAVES[:1]}, STACKS)
    assert main(["fleet", "workflow", "--fleet", str(path)]) == INVALID_INPUT
    assert "relative to the repository's root" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--stack", "prod-xx"], "--stack prod-xx: not a stack of the fleet (lab, prod-eu"),
        (["--policy-pack", "no-such-pack"], "--policy-pack"),
    ],
)
def test_a_fleet_run_is_refused_for_a_stack_or_pack_it_does_not_have(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    said: str,
) -> None:
    path = write_fleet(tmp_path, {"waves": THREE_WAVES}, STACKS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert main(["fleet", "preview", "--fleet", str(path), *extra]) == INVALID_INPUT
    assert said in capsys.readouterr().err


def test_a_stack_on_pulumi_cloud_is_selected_in_the_configured_organization(monkeypatch: pytest.MonkeyPatch) -> None:
    """As `.github/scripts/pulumi-login.sh` selects it, so the workflow's leg and its login agree."""
    from fleet.automation import qualified

    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.setenv("PULUMI_CLOUD_ORGANIZATION", "gpu-team")
    assert qualified("prod-eu") == "gpu-team/volcano-platform/prod-eu"
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://state")
    assert qualified("prod-eu") == "prod-eu"


def test_an_encrypted_kubeconfig_is_left_for_the_cli_to_decrypt(tmp_path: Path) -> None:
    """Offline it is a placeholder: the gates ask the CLI for it (tests/e2e/test_fleet.py does so
    with a real encrypted value) instead of writing the placeholder out as a kubeconfig."""
    from fleet.gates import Target

    path = write_fleet(tmp_path, {"waves": THREE_WAVES[:1]}, STACKS)
    stack_file = tmp_path / "Pulumi.lab.yaml"
    document = yaml.safe_load(stack_file.read_text())
    ciphertext = "v1:" + "A" * 16 + ":" + "B" * 24  # a 12-byte nonce and a 16-byte tag: its shape
    document["config"]["volcano-platform:cluster"]["kubeconfig"] = {"secure": ciphertext}
    document["encryptionsalt"] = "v1:" + "C" * 16 + ":" + "D" * 24
    stack_file.write_text(yaml.safe_dump(document))
    target = Target.of(read_fleet(path), "lab")
    assert target.needs_decrypted_kubeconfig and target.access.kubeconfig is None
    decrypted = target.with_kubeconfig("/clusters/lab.kubeconfig")
    assert decrypted.access.kubeconfig == "/clusters/lab.kubeconfig" and not decrypted.needs_decrypted_kubeconfig
