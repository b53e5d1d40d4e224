"""A fleet's stacks in wave order: the gates before `up`, `up` (or `preview`), the gate after it.

`up` goes wave by wave, each wave's stacks `parallel` at a time, each stack in a process of its
own (`automation.py`): a stack whose gate or `up` fails stops the fleet once its wave is done, and
the stacks of later waves are left untouched. `preview` changes nothing, so it goes through every
wave and reports every gate. A gate named with `--override` (and allowed by the fleet file) is run
and reported, but does not stop the stack; the override is written into the update's message, so
the stack's history keeps it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from itertools import repeat
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from fleet import automation
from fleet.fleet_file import Fleet, read_fleet
from fleet.gates import BEFORE_UP, GateResult, Target, timed
from fleet.workloads import stack_workloads, workloads_gate

SUCCEEDED, FAILED, NOT_STARTED = "succeeded", "failed", "not started"


@dataclass
class StackOutcome:
    stack: str
    wave: str
    step: str
    """The last step run: `preview` or `up`; `gates` when a gate stopped the stack before it,
    `none` when its wave never started."""
    result: str
    gates: list[GateResult] = field(default_factory=list)
    changes: dict[str, int] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0

    @property
    def failed_gate(self) -> GateResult | None:
        return next((g for g in self.gates if not g.passed and not g.overridden), None)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["gates"] = [g.as_json() for g in self.gates]
        return out


@dataclass
class FleetRun:
    action: str
    outcomes: list[StackOutcome]
    stopped_by: str | None = None
    """The stack whose failure kept later waves from starting."""
    overrides: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return all(o.result == SUCCEEDED and o.failed_gate is None for o in self.outcomes)


def _say(outcome: StackOutcome, text: str) -> None:
    print(f"fleet: {outcome.wave}/{outcome.stack}: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Options:
    """How the fleet runs: the gates `--override` passes, the policy packs `preview`/`up` run
    (`--policy-pack`), and the stacks `--stack` limits it to (all when empty)."""

    overrides: tuple[str, ...] = ()
    policy_packs: tuple[str, ...] = ()
    only: tuple[str, ...] = ()


def run_stack(fleet_path: str, stack: str, action: str, options: Options) -> StackOutcome:
    """One stack's gates and step (in a process of its own)."""
    started = time.perf_counter()
    fleet = read_fleet(Path(fleet_path))
    target = Target.of(fleet, stack)
    outcome = StackOutcome(stack, fleet.wave_of(stack), "gates", SUCCEEDED)
    if target.needs_decrypted_kubeconfig:
        target = _with_decrypted_kubeconfig(outcome, target, fleet)
    for name, gate in BEFORE_UP.items():
        outcome.gates.append(_gate(outcome, name, partial(gate, target), options.overrides))
        if not outcome.gates[0].passed or (action == "up" and outcome.failed_gate is not None):
            break  # an invalid stack can be judged no further; `up` stops at its first failed gate
    if not outcome.gates[0].passed or (action == "up" and outcome.failed_gate is not None):
        outcome.result = FAILED
    elif action == "preview":
        outcome.step = "preview"
        _step(outcome, lambda: automation.preview(stack, fleet.project, options.policy_packs))
    else:
        _up(outcome, fleet, target, options)
    outcome.seconds = round(time.perf_counter() - started, 1)
    return outcome


def _with_decrypted_kubeconfig(outcome: StackOutcome, target: Target, fleet: Fleet) -> Target:
    """The stack's encrypted `cluster.kubeconfig`, decrypted by the CLI with the environment's
    secrets provider, so the gates read the cluster `up` writes to; unreadable, the gates use the
    ambient kubeconfig and say so."""
    try:
        value = automation.config_value(outcome.stack, fleet.project, "cluster.kubeconfig")
    except automation.StackStepError as error:
        _say(outcome, f"the encrypted cluster.kubeconfig cannot be read ({error}); the gates use the ambient one")
        return target
    return target.with_kubeconfig(value)


def _gate(outcome: StackOutcome, name: str, gate: Callable[[], GateResult], overrides: tuple[str, ...]) -> GateResult:
    _say(outcome, f"gate {name}...")
    result = timed(gate)
    result.overridden = not result.passed and name in overrides
    verdict = "passed" if result.passed else ("failed, overridden" if result.overridden else "FAILED")
    _say(outcome, f"gate {name} {verdict} in {result.seconds:g} s: {result.said}")
    return result


def _step(outcome: StackOutcome, step: Callable[[], automation.StepResult]) -> automation.StepResult | None:
    _say(outcome, f"{outcome.step}...")
    started = time.perf_counter()
    try:
        done = step()
    except automation.StackStepError as error:
        outcome.result, outcome.error = FAILED, str(error)
        last = outcome.error.splitlines()[-1] if outcome.error else ""
        _say(outcome, f"{outcome.step} FAILED in {time.perf_counter() - started:.0f} s: {last}")
        return None
    outcome.changes = done.changes
    _say(outcome, f"{outcome.step} done in {time.perf_counter() - started:.0f} s: {_changes(done.changes)}")
    return done


def _up(outcome: StackOutcome, fleet: Fleet, target: Target, options: Options) -> None:
    """`up`, then the gate after it; after a failed `up` the gate still reads what the state
    holds, to say why (a gang's PodGroup left Pending)."""
    message = f"volcano-platform fleet up, wave {outcome.wave}"
    overridden = [g for g in outcome.gates if g.overridden]
    if overridden:
        message += "; gates overridden: " + "; ".join(f"{g.gate} ({g.said})" for g in overridden)
    outcome.step = "up"
    done = _step(outcome, lambda: automation.up(outcome.stack, fleet.project, message[:1000], options.policy_packs))
    try:
        state = done.resources if done is not None else automation.resources(outcome.stack, fleet.project)
    except automation.StackStepError:
        return
    workloads = stack_workloads(state)
    outcome.gates.append(_gate(outcome, "workloads", lambda: workloads_gate(target.access, workloads, outcome.stack),
                               options.overrides))  # fmt: skip
    if outcome.failed_gate is not None:
        outcome.result = FAILED


def _changes(changes: dict[str, int]) -> str:
    return ", ".join(f"{n} to {op}" for op, n in sorted(changes.items())) or "no change"


def roll_out(fleet: Fleet, action: str, options: Options) -> FleetRun:
    """Every wave in order (`up` stops after a wave with a failed stack); with `options.only`, just
    those stacks, in their waves."""
    run = FleetRun(action, [], overrides=options.overrides)
    context = get_context("spawn")
    for wave in fleet.waves:
        stacks = [stack for stack in wave.stacks if not options.only or stack in options.only]
        if not stacks:
            continue
        if run.stopped_by is not None:
            run.outcomes += [StackOutcome(stack, wave.name, "none", NOT_STARTED) for stack in stacks]
            continue
        workers = min(wave.parallel, len(stacks))
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            done = list(pool.map(run_stack, repeat(str(fleet.path)), stacks, repeat(action), repeat(options)))
        run.outcomes += done
        failed = [o for o in done if o.result == FAILED or o.failed_gate is not None]
        if action == "up" and failed:
            run.stopped_by = failed[0].stack
    return run
