"""The live preview as a pull request shows it: what changes first, drift that is not the pull
request's said instead of failing it (the real CLI's JSON is read in tests/e2e/test_day_two.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from cli.preview_report import ROW_LIMIT, failed_on_conflict, report
from tests.conftest import PROJECT_DIR

URN = "urn:pulumi:lab::volcano-platform::volcano-platform:index:GpuPlatform$kubernetes:apps/v1:Deployment::model-qwen"


def deployment(replicas: int, image: str = "vllm/vllm-openai:v0.11.0") -> dict[str, Any]:
    return {
        "inputs": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "qwen", "namespace": "team-a"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}},
        }
    }


UPDATE = {
    "op": "update",
    "urn": URN,
    "oldState": deployment(1),
    "newState": deployment(2, "vllm/vllm-openai:v0.12.0"),
    "detailedDiff": {
        "spec.replicas": {"diffKind": "update", "inputDiff": True},
        "spec.template.spec.containers[0].image": {"diffKind": "update", "inputDiff": True},
    },
}
QUEUE = {"inputs": {"kind": "Queue", "metadata": {"name": "team-c"}, "spec": {"weight": 1}}}


def test_the_changes_come_first_with_each_field_old_and_new() -> None:
    digest = {
        "steps": [
            {"op": "same", "urn": URN.replace("model-qwen", "other"), "newState": deployment(1)},
            UPDATE,
            {
                "op": "create",
                "urn": "urn:pulumi:lab::p::kubernetes:scheduling.volcano.sh/v1beta1:Queue::team-c",
                "newState": QUEUE,
            },
        ],
        "changeSummary": {"update": 1, "create": 1, "same": 1154},
    }
    text = report(digest)
    lines = text.splitlines()
    assert lines[0] == "1 to create, 1 to update; 1154 unchanged."
    assert "~ update    Deployment team-a/qwen" in lines
    assert "    spec.replicas: 1 → 2" in lines
    assert "    spec.template.spec.containers[0].image: vllm/vllm-openai:v0.11.0 → vllm/vllm-openai:v0.12.0" in lines
    assert "+ create    Queue team-c" in lines
    assert "other" not in text, "an unchanged object is not listed"


def test_a_preview_with_nothing_to_do_is_one_line() -> None:
    assert report({"steps": [], "changeSummary": {"same": 40}}) == "No changes; 40 unchanged.\n"


def test_thousands_of_changes_stay_bounded() -> None:
    steps = [{**UPDATE, "urn": f"{URN}{n}"} for n in range(5000)]
    text = report({"steps": steps, "changeSummary": {"update": 5000}})
    assert f"... and {5000 - ROW_LIMIT} more changed objects" in text
    assert len(text) < 60_000, "the comment keeps its first lines: the summary and the first changes"


CONFLICT_ERROR = {
    "severity": "error",
    "urn": URN,
    "message": (
        'the resource could not be updated: Apply failed with 1 conflict: conflict with "ops-console": .spec.replicas'
    ),
}


def test_a_field_conflict_is_told_from_other_failures() -> None:
    assert failed_on_conflict({"diagnostics": [CONFLICT_ERROR]})
    assert not failed_on_conflict({"diagnostics": [{"severity": "error", "message": "connection refused"}]})
    assert not failed_on_conflict({"diagnostics": [{**CONFLICT_ERROR, "severity": "warning"}]})


def test_a_forced_preview_says_so_first_with_the_managers_and_the_fix() -> None:
    text = report({"steps": [UPDATE], "changeSummary": {"update": 1}}, conflicts={"diagnostics": [CONFLICT_ERROR]})
    assert text.startswith("DRIFT THE STACK DOES NOT OWN: fields held on the cluster by `ops-console`")
    assert "cluster.forceFieldOwnership: true" in text
    by_kubectl = {
        "diagnostics": [
            {
                **CONFLICT_ERROR,
                "message": 'Apply failed with 1 conflict: conflict with "kubectl-patch" '
                "using scheduling.volcano.sh/v1beta1: .spec.weight",
            }
        ]
    }
    text = report({"steps": [UPDATE], "changeSummary": {"update": 1}}, conflicts=by_kubectl)
    assert text.startswith("DRIFT: fields changed on the cluster with kubectl (`kubectl-patch`)")
    assert "`pulumi up --refresh` sets them back" in text


FAKE_PULUMI = """#!/usr/bin/env python3
import json, os, sys
forced = os.environ.get("PULUMI_K8S_ENABLE_PATCH_FORCE") == "true"
with open(os.environ["CALLS"], "a") as calls:
    calls.write(json.dumps({"args": sys.argv[1:], "forced": forced}) + "\\n")
if forced:
    print(json.dumps({"steps": [UPDATE], "changeSummary": {"update": 1, "same": 3}}))
    sys.exit(0)
print(json.dumps({"diagnostics": [ERROR], "changeSummary": {}}))
print("error: preview failed", file=sys.stderr)
sys.exit(255)
"""


def _run_preview(tmp_path: Path, error: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], list[Any], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "pulumi"
    fake.write_text(
        FAKE_PULUMI.replace("[UPDATE]", f"json.loads({json.dumps(json.dumps([UPDATE]))})").replace(
            "[ERROR]", f"json.loads({json.dumps(json.dumps([error]))})"
        )
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls.jsonl"
    out = tmp_path / "preview.md"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CALLS": str(calls),
           "PULUMI_BACKEND_URL": "s3://state"}  # fmt: skip
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run(
        [str(PROJECT_DIR / ".github" / "scripts" / "pulumi-run.sh"), "preview", "lab", str(out)],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    return proc, [json.loads(line) for line in calls.read_text().splitlines()], out.read_text()


def test_drift_another_manager_holds_does_not_fail_the_pull_requests_preview(tmp_path: Path) -> None:
    proc, calls, comment = _run_preview(tmp_path, CONFLICT_ERROR)
    assert proc.returncode == 0, proc.stderr
    assert [call["forced"] for call in calls] == [False, True]
    assert calls[0]["args"][:2] == ["preview", "--stack"] and "--refresh" in calls[0]["args"]
    assert "--policy-pack" in calls[1]["args"] and "--json" in calls[1]["args"]
    assert comment.startswith("### pulumi preview of `lab` (exit 0)")
    assert "DRIFT THE STACK DOES NOT OWN" in comment and "~ update    Deployment team-a/qwen" in comment


def test_any_other_failure_fails_the_preview_and_shows_what_the_cli_said(tmp_path: Path) -> None:
    proc, calls, comment = _run_preview(tmp_path, {"severity": "error", "message": "connection refused"})
    assert proc.returncode == 255
    assert [call["forced"] for call in calls] == [False], "only a field conflict is taken again"
    assert "(exit 255)" in comment and "error stack: connection refused" in comment
    assert "error: preview failed" in comment
