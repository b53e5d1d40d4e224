"""A cluster team keeps its own stack in a copy of this repository: the tests check it (config,
render, schemas, policy, the workflows' stack list) and never ask for generated files, so a tenant
pull request touches only the tenant's file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.slow  # runs pytest on a copy of the repository

STACK_FILE = """\
# yaml-language-server: $schema=./schema/pulumi-stack.schema.json
config:
  volcano-platform:include:
    tenants: ["clusters/lab/tenants/*.yaml"]
  volcano-platform:cluster:
    name: lab
    gpusPerNode: 8
  volcano-platform:topology:
    tiers: [topology.lab.example/leaf]
    domains:
      leaf-1:
        nodes: ["lab-gpu-[1-8]"]
"""
TENANT_FILE = """\
tenants:
  vision:
    queue:
      capability: {nvidia.com/gpu: 32}
      deserved: {nvidia.com/gpu: 16}
models:
  qwen3-8b:
    image: vllm/vllm-openai:v0.33.0
    source:
      hub: {id: Qwen/Qwen3-8B}
    resources: {gpus: 1, cpu: 8, memory: 48Gi}
    priorityClass: p2-normal
"""
TESTS_OVER_EVERY_STACK = [
    "tests/offline/test_stacks.py",
    "tests/config/test_loading.py",
    "tests/config/test_schema.py",
    "tests/config/test_handover.py",
    "tests/config/test_upstream.py",
    "tests/components/test_volcano.py",
    "tests/policy/test_policy.py",
    "tests/project/test_workflows.py",
    "tests/project/test_report_schemas.py",
]


def _tracked(root: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [name for name in listed if (root / name).is_file()]


def _files(root: Path) -> set[str]:
    skipped = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis")
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not any(s in p.parts for s in skipped)}


def test_a_clusters_own_stack_and_tenant_file_need_nothing_generated(tmp_path: Path) -> None:
    copy = tmp_path / "repository"
    for name in _tracked(PROJECT_DIR):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_DIR / name, copy / name)
    (copy / "Pulumi.lab.yaml").write_text(STACK_FILE)
    (copy / "clusters" / "lab" / "tenants").mkdir(parents=True)
    (copy / "clusters" / "lab" / "tenants" / "vision.yaml").write_text(TENANT_FILE)
    before = _files(copy)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "lab or golden",
            *TESTS_OVER_EVERY_STACK,
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert (
        " passed" in result.stdout
        and "lab"
        in subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "--collect-only", "-k", "lab", *TESTS_OVER_EVERY_STACK],
            cwd=copy,
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
    ), "the cluster's stack is among the stacks the tests check"
    assert _files(copy) - before == set(), "nothing was generated or needed"
