"""The fleet file (`fleet.yaml`): the project's stacks in rollout order, and the gates each passes.

    waves:                       # in order; a wave starts when every stack of the one before passed
      - name: lab
        stacks: [lab]
      - name: prod
        stacks: [prod-eu, prod-us]
        parallel: 2              # stacks of this wave at once (default 1)
        environment: production  # the deploy workflow's GitHub environment (default: the wave's name)
    gates:
      protectedTenants: [serving]  # the what-if gate fails when the change would evict their work
      overridable: [whatif]        # gates `fleet up --override <gate>` may pass anyway (recorded)

A stack is `Pulumi.<stack>.yaml` in the project folder (`project`, default the fleet file's own
folder, where `Pulumi.yaml` is). The file is read like a stack file (YAML 1.2, strict types, no
unknown keys) and every problem is reported at its key path, with the fix; nothing runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from config.errors import ConfigError, Problem
from config.schema.base import ConfigModel, problems_from_validation_error
from config.stack_file.yaml12 import StackYamlError, read_yaml

OverridableGate = Literal["preflight", "whatif", "workloads"]
"""`check` is not among them: a stack that does not check cannot be deployed."""
STACK_NAME = r"^[A-Za-z0-9_.-]{1,100}$"
WAVE_NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
ENVIRONMENT_NAME = r"^[A-Za-z0-9_.-]{1,255}$"


class Wave(ConfigModel):
    name: str = Field(pattern=WAVE_NAME)
    """The wave's name in progress, the report and the deploy workflow's jobs (a DNS label)."""
    stacks: list[Annotated[str, Field(pattern=STACK_NAME)]] = Field(min_length=1)
    """The stacks of this wave: each `Pulumi.<stack>.yaml` of the project, in no other wave."""
    parallel: int = Field(default=1, ge=1, le=32)
    """How many stacks of this wave run at once."""
    environment: str | None = Field(default=None, pattern=ENVIRONMENT_NAME)
    """The GitHub environment of this wave's jobs in the deploy workflow (`fleet workflow`): its
    reviewers approve the wave, and it holds the wave's clusters' kubeconfigs. Default: the wave's
    name."""

    @property
    def github_environment(self) -> str:
        return self.environment or self.name


class Gates(ConfigModel):
    protected_tenants: list[str] = Field(default_factory=list)
    """Tenants the what-if gate keeps whole: a stack whose change would preempt or reclaim any of
    their PodGroups (or their sub-teams') is stopped before `up`."""
    overridable: list[OverridableGate] = Field(default_factory=list)
    """Gates an operator may pass anyway with `fleet up --override <gate>`: the failure is kept in
    the report and in the update's message. A gate not listed cannot be overridden."""


class FleetModel(ConfigModel):
    project: str = "."
    """The project folder (with `Pulumi.yaml` and the stack files), relative to the fleet file."""
    waves: list[Wave] = Field(min_length=1)
    """The waves, in rollout order."""
    gates: Gates = Gates()


class FleetFileError(ConfigError):
    """The fleet file is invalid: every problem at its key path (exit 2)."""

    def __init__(self, problems: Sequence[Problem], path: Path):
        self.path = path
        super().__init__(problems)

    def render(self) -> str:
        noun = "problem" if len(self.problems) == 1 else "problems"
        lines = [f"invalid fleet file {getattr(self, 'path', '')} ({len(self.problems)} {noun}):"]
        return "\n".join(lines + [f"  - {problem}" for problem in self.problems])


@dataclass(frozen=True)
class Fleet:
    path: Path
    project: Path
    waves: tuple[Wave, ...]
    gates: Gates

    @property
    def stacks(self) -> list[str]:
        return [stack for wave in self.waves for stack in wave.stacks]

    def stack_file(self, stack: str) -> Path:
        return self.project / f"Pulumi.{stack}.yaml"

    def wave_of(self, stack: str) -> str:
        return next(wave.name for wave in self.waves if stack in wave.stacks)


def read_fleet(path: Path) -> Fleet:
    """The fleet file at `path`, checked whole; raises FleetFileError naming every bad key."""
    try:
        raw = read_yaml(path.read_bytes())
    except OSError as error:
        raise FleetFileError(
            [Problem("(fleet file)", f"cannot be read: {error.strerror}", "give its path")], path
        ) from None
    except StackYamlError as error:
        raise FleetFileError([Problem("(fleet file)", f"is not YAML: {error}", "fix the YAML")], path) from None
    if not isinstance(raw, dict):
        raise FleetFileError([Problem("(fleet file)", "must be a mapping with `waves`", "start with `waves:`")], path)
    try:
        model = FleetModel.model_validate(raw)
    except ValidationError as error:
        raise FleetFileError(problems_from_validation_error(error, FleetModel), path) from None
    project = (path.parent / model.project).resolve()
    problems = _project_problems(project) or _wave_problems(model, project)
    if problems:
        raise FleetFileError(problems, path)
    return Fleet(path, project, tuple(model.waves), model.gates)


def _project_problems(project: Path) -> list[Problem]:
    if (project / "Pulumi.yaml").is_file():
        return []
    return [
        Problem("project", f"`{project}` holds no Pulumi.yaml", "name the project's folder, relative to the fleet file")
    ]


def _wave_problems(model: FleetModel, project: Path) -> list[Problem]:
    known = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in project.glob("Pulumi.*.yaml"))
    problems: list[Problem] = []
    seen_waves: set[str] = set()
    first_wave: dict[str, str] = {}
    for index, wave in enumerate(model.waves):
        if wave.name in seen_waves:
            problems.append(Problem(f"waves[{index}].name", "names a wave twice", "give each wave its own name",
                                    wave.name))  # fmt: skip
        seen_waves.add(wave.name)
        for position, stack in enumerate(wave.stacks):
            key = f"waves[{index}].stacks[{position}]"
            if stack not in known:
                close = difflib.get_close_matches(stack, known, n=1)
                fix = f"did you mean `{close[0]}`?" if close else f"the project's stacks: {', '.join(known) or 'none'}"
                problems.append(Problem(key, f"no stack file Pulumi.{stack}.yaml in {project}", fix, stack))
            elif stack in first_wave:
                problems.append(Problem(key, f"is already in wave `{first_wave[stack]}`",
                                        "keep each stack in one wave", stack))  # fmt: skip
            else:
                first_wave[stack] = wave.name
    return problems
