"""A stack of the fleet through Pulumi's Automation API (`pulumi.automation`, the SDK the project
pins): a local workspace in the project folder, the stack selected by name, the program run inline.

The program is the project's `__main__.py`, run in this process by the language server the
Automation API starts for inline programs (`pulumi.automation._server.LanguageServer`); the CLI is
`pulumi` on the PATH, with the backend, passphrase and credentials of the environment, as for a
`pulumi up` by hand. The stack files' includes are read from the project folder
(`VOLCANO_PLATFORM_STACK_DIR`). One process runs one stack at a time: the SDK's runtime settings
are the process's.
"""

from __future__ import annotations

import os
import runpy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.project import PROJECT
from config.stack_file.includes import STACK_DIR_VARIABLE

PROGRAM = Path(__file__).resolve().parents[1] / "__main__.py"
NO_CHANGE = "same"


class StackStepError(Exception):
    """`preview`, `up` or reading the stack failed; the message is the CLI's error, shortened."""


@dataclass
class StepResult:
    changes: dict[str, int] = field(default_factory=dict)
    """Resources by operation (`create`, `update`, `delete`, `replace`...), unchanged ones left out."""
    resources: list[dict[str, Any]] = field(default_factory=list)
    """The stack's state after the step (`up`), for the gate after it."""


def _program() -> None:
    runpy.run_path(str(PROGRAM), run_name="__main__")


def _stack(name: str, project_dir: Path) -> Any:
    from pulumi import automation

    os.environ[STACK_DIR_VARIABLE] = str(project_dir)
    options = automation.LocalWorkspaceOptions(work_dir=str(project_dir))
    try:
        return automation.select_stack(stack_name=qualified(name), project_name=PROJECT, program=_program,
                                       opts=options)  # fmt: skip
    except automation.StackNotFoundError:
        raise StackStepError(
            f"stack `{name}` does not exist in the backend: `pulumi stack init {name}` first"
        ) from None
    except automation.CommandError as error:
        raise StackStepError(_cli_error(error)) from None


def qualified(name: str) -> str:
    """The stack's name as `.github/scripts/pulumi-login.sh` selects it: in Pulumi Cloud, inside the
    organization PULUMI_CLOUD_ORGANIZATION names (not the token owner's default one); in a
    self-managed backend, the name alone."""
    organization = os.environ.get("PULUMI_CLOUD_ORGANIZATION")
    if organization and not os.environ.get("PULUMI_BACKEND_URL"):
        return f"{organization}/{PROJECT}/{name}"
    return name


def _cli_error(error: Exception) -> str:
    """The CLI's own error lines (`error: ...`, the resources that failed), at most a few."""
    text = str(error)
    lines = [line.strip() for line in text.splitlines()]
    said = [line for line in lines if "error:" in line or line.startswith(("kubernetes:", "volcano-platform:"))]
    kept = list(dict.fromkeys(said))[-6:] or [line for line in lines if line][-6:]
    return "\n".join(kept)[:2000]


def _changed(summary: dict[Any, int] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for operation, count in (summary or {}).items():
        key = getattr(operation, "value", operation)
        if key != NO_CHANGE and count:
            out[str(key)] = int(count)
    return out


def _packs(policy_packs: tuple[str, ...]) -> list[str] | None:
    """`--policy-pack` for each folder; none at all when there is none (the SDK's default)."""
    return list(policy_packs) or None


def preview(
    name: str, project_dir: Path, policy_packs: tuple[str, ...] = (), on_output: Callable[[str], None] | None = None
) -> StepResult:
    from pulumi import automation

    stack = _stack(name, project_dir)
    try:
        result = stack.preview(refresh=True, policy_packs=_packs(policy_packs), on_output=on_output)
    except automation.CommandError as error:
        raise StackStepError(_cli_error(error)) from None
    return StepResult(_changed(result.change_summary))


def up(
    name: str,
    project_dir: Path,
    message: str,
    policy_packs: tuple[str, ...] = (),
    on_output: Callable[[str], None] | None = None,
) -> StepResult:
    from pulumi import automation

    stack = _stack(name, project_dir)
    try:
        result = stack.up(refresh=True, message=message, policy_packs=_packs(policy_packs), on_output=on_output)
    except automation.CommandError as error:
        raise StackStepError(_cli_error(error)) from None
    return StepResult(_changed(result.summary.resource_changes), _resources(stack))


def config_value(name: str, project_dir: Path, path: str) -> str:
    """A key of the stack's config (`cluster.kubeconfig`), decrypted by the CLI with the
    environment's secrets provider, as the program receives it under `up`."""
    from pulumi import automation

    stack = _stack(name, project_dir)
    try:
        return str(stack.get_config(f"{PROJECT}:{path}", path=True).value)
    except automation.CommandError as error:
        raise StackStepError(_cli_error(error)) from None


def resources(name: str, project_dir: Path) -> list[dict[str, Any]]:
    """The stack's resources as its state records them (also after a failed `up`)."""
    return _resources(_stack(name, project_dir))


def _resources(stack: Any) -> list[dict[str, Any]]:
    from pulumi import automation

    try:
        deployment = stack.export_stack().deployment or {}
    except automation.CommandError as error:
        raise StackStepError(_cli_error(error)) from None
    found: list[dict[str, Any]] = deployment.get("resources") or []
    return found


def last_update(name: str, project_dir: Path) -> dict[str, Any]:
    """The stack's newest update (kind, result, time, message, changes) and its resource count;
    secrets stay hidden."""
    from pulumi import automation

    stack = _stack(name, project_dir)
    try:
        history = stack.history(page_size=1, show_secrets=False)
    except automation.CommandError as error:
        raise StackStepError(_cli_error(error)) from None
    count = len(_resources(stack))
    if not history:
        return {"kind": None, "result": None, "ended": None, "message": None, "changes": {}, "resources": count}
    last = history[0]
    return {
        "kind": last.kind,
        "result": last.result,
        "ended": last.end_time.isoformat() if last.end_time else None,
        "message": last.message,
        "changes": _changed(last.resource_changes),
        "resources": count,
    }
