"""`volcano-platform sandbox` as a user runs it: a cluster of the dev stack's shape started in the
background, the real Pulumi CLI's `up` against it, the model's pods placed by Volcano's scheduler,
and `down` ending every process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox.session import SANDBOX_DIR_VARIABLE
from tests.conftest import PROJECT_DIR, TOOL

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def _tool(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TOOL, "sandbox", *args], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def test_a_user_starts_a_sandbox_applies_the_stack_and_stops_it(tmp_path: Path, real_programs: dict[str, Path]) -> None:
    env = {**os.environ, SANDBOX_DIR_VARIABLE: str(tmp_path)}
    try:
        started = _tool("up", "--stack", "dev", env=env)
        assert started.returncode == 0, started.stderr[-3000:]
        assert "runs: 4 node(s)" in started.stdout
        assert _tool("status", "--stack", "dev", env=env).returncode == 0
        applied = _tool("pulumi", "--stack", "dev", "up", "--yes", "--non-interactive", env=env)
        assert applied.returncode == 0, (applied.stdout + applied.stderr)[-3000:]
        kubeconfig = tmp_path / "dev" / "cluster" / "kubeconfig"
        pods = subprocess.run(
            [str(real_programs["kubectl"]), "--kubeconfig", str(kubeconfig), "get", "pods", "-n", "team-a", "-o",
             "jsonpath={.items[*].spec.nodeName}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        assert pods and all(node.startswith("dev-gpu-") for node in pods), pods
        again = _tool("up", "--stack", "dev", env=env)
        assert again.returncode == 0 and "starting a cluster" not in again.stderr, "the running sandbox is reused"
    finally:
        stopped = _tool("down", "--stack", "dev", env=env)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert _tool("status", "--stack", "dev", env=env).returncode == 1
