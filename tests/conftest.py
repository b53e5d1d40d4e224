"""Shared helpers: load and render stacks from config dicts, and locate the upstream schemas."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import config
from offline.render import StackRender, render_stack
from offline.schemas import upstream_dir

PROJECT_DIR = Path(__file__).resolve().parent.parent
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in PROJECT_DIR.glob("Pulumi.*.yaml"))

requires_upstream = pytest.mark.skipif(
    upstream_dir() is None,
    reason="upstream CRDs/chart values not found (../shared/upstream or $VOLCANO_PLATFORM_UPSTREAM)",
)


def stack_raw(stack: str) -> dict[str, Any]:
    """The `volcano-platform:` keys of a committed stack file, without the prefix."""
    data = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())
    return {key.split(":", 1)[1]: value for key, value in data["config"].items() if key.startswith("volcano-platform:")}


def write_stack(path: Path, raw: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"config": {f"volcano-platform:{k}": v for k, v in raw.items()}}, sort_keys=False))
    return path


def load(raw: dict[str, Any], stack: str = "test") -> config.PlatformSpec:
    return config.load_raw(copy.deepcopy(raw), stack)


def problems_of(raw: dict[str, Any]) -> list[config.Problem]:
    with pytest.raises(config.ConfigError) as caught:
        load(raw)
    return list(caught.value.problems)


def paths_of(raw: dict[str, Any]) -> list[str]:
    return [p.path for p in problems_of(raw)]


@functools.cache
def _render_committed(stack: str) -> StackRender:
    return render_stack(PROJECT_DIR, stack)


@pytest.fixture
def committed_render() -> Callable[[str], StackRender]:
    """Render a committed stack once per test session (renders are deterministic)."""
    return _render_committed


@pytest.fixture
def render_raw(tmp_path: Path) -> Callable[..., StackRender]:
    """Render a stack from a raw config dict through the real offline engine."""
    counter = iter(range(1000))

    def render(raw: dict[str, Any], stack: str = "test") -> StackRender:
        path = write_stack(tmp_path / f"Pulumi.{stack}-{next(counter)}.yaml", raw)
        return render_stack(PROJECT_DIR, stack, path)

    return render


def mutate(raw: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    copied = copy.deepcopy(raw)
    change(copied)
    return copied


def under_parent_org(raw: dict[str, Any], **queue: Any) -> dict[str, Any]:
    """The seed cluster's two tenants placed under a parent tenant `org` (hierarchical queues)."""
    gpu = "mars-tech.com/gpu"
    out = copy.deepcopy(raw)
    out["tenants"]["org"] = {
        "namespaces": [],
        "queue": {"capability": {gpu: 1024}, "deserved": {gpu: 768}, "guarantee": {gpu: 128}, **queue},
    }
    for tenant in ("tenanta", "tenantb"):
        out["tenants"][tenant]["queue"]["parent"] = "org"
    return out
