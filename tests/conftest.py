"""Shared helpers: load and render stacks from config dicts, and locate the upstream schemas."""

from __future__ import annotations

import copy
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import config
from config.errors import REDACTED
from config.stack_file.includes import merge_includes
from config.stack_file.reader import read_stack
from offline.render import StackRender, render_stack

PROJECT_DIR = Path(__file__).resolve().parent.parent
TOOL: tuple[str, ...] = (
    (str(Path(sys.executable).parent / "volcano-platform"),)
    if (Path(sys.executable).parent / "volcano-platform").is_file()
    else (sys.executable, "-m", "cli")
)
"""The project's command as users run it: the installed console script (`make` installs it)."""
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in PROJECT_DIR.glob("Pulumi.*.yaml"))
"""Every stack in the repository: the project's examples and any cluster's own (each is checked,
rendered, validated against the schemas and the policy pack)."""
EXAMPLE_STACKS = ("aicloud-a", "aicloud-b", "aicloud-eks", "dev")
"""The project's example stacks, whose renders are reviewed golden files (`make golden`, the
Makefile's `EXAMPLES`); a cluster's own stack in the repository needs none."""


def stack_raw(stack: str) -> dict[str, Any]:
    """The `volcano-platform:` keys of a committed stack, without the prefix, read as the Pulumi
    CLI reads them (encrypted values are the `[secret]` placeholder), with its included files
    merged in (and `include` dropped), so a test can change and write it anywhere."""
    merged = merge_includes(read_stack(PROJECT_DIR, stack).raw, PROJECT_DIR)
    assert not merged.problems, merged.problems
    return {k: v for k, v in copy.deepcopy(merged.raw).items() if k != "include"}


def _encrypted(value: Any) -> Any:
    """Placeholders of encrypted values become encrypted values again (any ciphertext will do:
    the offline engine never decrypts)."""
    if value == REDACTED:
        return {"secure": "v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA=="}  # a 12-byte nonce, a 16-byte tag
    if isinstance(value, dict):
        return {k: _encrypted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encrypted(v) for v in value]
    return value


def write_stack(path: Path, raw: dict[str, Any]) -> Path:
    config = {f"volcano-platform:{k}": _encrypted(v) for k, v in raw.items()}
    # A passphrase stack's salt, so that the CLI could decrypt the values (any salt will do offline).
    salt = {"encryptionsalt": "v1:dGVzdA==:v1:dGVzdA==:dGVzdA=="} if REDACTED in repr(raw) else {}
    path.write_text(yaml.safe_dump({**salt, "config": config}, sort_keys=False))
    return path


def load(raw: dict[str, Any], stack: str = "test", encrypted: tuple[str, ...] | list[str] = ()) -> config.PlatformSpec:
    return config.load_raw(copy.deepcopy(raw), stack, encrypted=encrypted)


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


@functools.cache
def _seed_warnings() -> frozenset[str]:
    return frozenset(str(w) for w in load(stack_raw("aicloud-a")).warnings)


def new_warnings(spec: config.PlatformSpec) -> list[config.Problem]:
    """Warnings beyond those the unchanged example cluster has (its 0.11 images' load budgets)."""
    return [w for w in spec.warnings if str(w) not in _seed_warnings()]


# Layers whose tests run the whole program (renders, diffs, the command line, the workflows' scripts)
# or other tools; `make quick` leaves them out, `make test` runs everything.
SLOW_FOLDERS = ("offline", "live", "project", "cli")
SLOW_FIXTURES = {"render_raw", "committed_render"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(str(item.path)).relative_to(PROJECT_DIR / "tests").parts[0]
        fixtures = set(getattr(item, "fixturenames", ()))
        if folder in SLOW_FOLDERS or fixtures & SLOW_FIXTURES or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def require_tool(path: str | None, what: str) -> str:
    """The path of an external tool the test needs. Missing, the test fails in CI (`CI=true`, where
    `make test` has installed it, so its absence is a bug) and is skipped elsewhere, saying how to
    get it."""
    if path:
        return path
    message = f"{what} is not installed: run `make tools` (tests/tools/install.sh)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)
