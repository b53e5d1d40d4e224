"""GitHub workflows: valid against the workflow schema, actions pinned, same commands as the Makefile."""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import PROJECT_DIR, STACKS

WORKFLOWS = sorted((PROJECT_DIR / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+|[0-9a-f]{40})$")


def _workflow(path: Path) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on".
    data = yaml.safe_load(path.read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_there_are_pr_preview_and_deploy_workflows() -> None:
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "preview.yml", "pull-request.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_validates_against_the_github_schema(path: Path) -> None:
    schema_file = resources.files("check_jsonschema.builtin_schemas.vendor") / "github-workflows.json"
    schema = json.loads(schema_file.read_text())
    jsonschema.validate(_workflow(path), schema)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_to_a_major_version_or_sha(path: Path) -> None:
    for step in _steps(_workflow(path)):
        if "uses" in step:
            assert PINNED.match(step["uses"]), f"{path.name}: `{step['uses']}` is not pinned"


def test_live_workflows_use_pulumi_actions_with_the_policy_pack() -> None:
    for name, command in (("preview.yml", "preview"), ("deploy.yml", "up")):
        workflow = _workflow(PROJECT_DIR / ".github" / "workflows" / name)
        (step,) = [s for s in _steps(workflow) if s.get("uses", "").startswith("pulumi/actions@")]
        assert step["with"]["command"] == command and step["with"]["policyPacks"] == "policy"
        assert step["with"]["stack-name"].startswith("organization/volcano-platform/")
        assert "PULUMI_BACKEND_URL" in json.dumps(workflow)
    deploy = _workflow(PROJECT_DIR / ".github" / "workflows" / "deploy.yml")
    assert deploy["jobs"]["up"]["concurrency"]["group"] == "pulumi-up-${{ matrix.stack }}"
    assert deploy["on"]["push"]["branches"] == ["main"]
    preview = _workflow(PROJECT_DIR / ".github" / "workflows" / "preview.yml")
    assert preview["jobs"]["preview"]["steps"][-1]["with"]["comment-on-pr"] is True


def test_pull_request_job_runs_the_makefile_commands() -> None:
    workflow = _workflow(PROJECT_DIR / ".github" / "workflows" / "pull-request.yml")
    runs = [s["run"] for s in _steps(workflow) if "run" in s]
    assert "make test" in runs
    assert any(".github/scripts/offline-diff.sh" in run for run in runs)
    script = (PROJECT_DIR / ".github" / "scripts" / "offline-diff.sh").read_text()
    assert 'make -s --no-print-directory diff STACK="$stack" BASE="$base"' in script
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert "diff: $(VENV)/.installed\n\t$(PY) -m offline diff --stack $(STACK) --base $(BASE)" in makefile
    comment = next(s for s in _steps(workflow) if "sticky-pull-request-comment" in s.get("uses", ""))
    assert comment["with"]["header"] == "offline-diff"


def test_stack_matrix_lists_every_stack() -> None:
    output = subprocess.run(
        [PROJECT_DIR / ".github" / "scripts" / "stacks.sh"], capture_output=True, text=True, check=True
    ).stdout
    matrix = json.loads(output)
    assert [m["stack"] for m in matrix] == STACKS
    assert {m["kubeconfig"] for m in matrix} == {"KUBECONFIG_" + s.upper().replace("-", "_") for s in STACKS}


def test_offline_diff_comment_covers_every_stack_and_respects_the_limit() -> None:
    proc = subprocess.run(
        [PROJECT_DIR / ".github" / "scripts" / "offline-diff.sh", "HEAD", "2000"],
        capture_output=True,
        text=True,
        check=False,
        cwd=PROJECT_DIR,
    )
    assert proc.returncode == 0, proc.stderr
    for stack in STACKS:
        assert f"| `{stack}` |" in proc.stdout
    assert len(proc.stdout) <= 2000 + 200
