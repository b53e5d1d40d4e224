"""New models of one change that race for the same room.

The what-if places a change's models all at once, in Volcano's order (priority, then creation).
`pulumi up` creates them over seconds, and Volcano's scheduler, running every second, places
whichever it meets first; so where the change's new models do not all fit, which of them waits is
the order of `up` (found on the real cluster: `tests/e2e/test_whatif_real.py`, three cells of 60).
A new model that waits, but runs when it is the only new model of the change, races with the new
models that took its room: those placed in its queue, or, where none is, every new model placed.
Both outcomes are the scheduler's; the report says so rather than picking one.

`up` may also create the new models far enough apart that Volcano places each before the next
arrives: one at a time, in the order the stack declares them (the order the program registers
them). Where that order ends otherwise than all at once (three models of which the first two fit
together, a Deployment whose replicas take the room before a later model arrives: the real
cluster did both), the verdict says what happens in that order too (`in_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from config.platform_labels import MODEL_LABEL
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from whatif.cluster import ModelJobs, hold_in_waves, model_tasks, runs
from whatif.scheduler.session import Session
from whatif.workload import FINISHED, MANAGED_KEY, MANAGED_VALUE, Objects

RACE_CHECKS = 4
"""Waiting models tried on the largest cluster races are looked for on: each is one more
simulation of the whole cluster."""
RACE_CHECK_OBJECTS = 20_000
"""Above this many nodes and pods, races are not looked for (each look is one more simulation)."""
RACE_CHECK_WORK = RACE_CHECKS * RACE_CHECK_OBJECTS
"""Nodes and pods times waiting models tried: on a smaller cluster more of them are tried, so a
change of many new models has each of its waiting ones tried (`race_checks`)."""
IN_ORDER_WORK = 200_000
"""Nodes and pods times new models, above which the models are not tried one at a time (each is
a few more scheduling cycles of the whole cluster)."""
CYCLES_PER_WAVE = 4
"""Cycles a model arriving alone may take (bind, evict and bind again, quiet) in the budget."""
RUNNING_VERDICTS = ("fits", "fits-after-eviction")
"""The verdicts of a model that runs (`predict.FITS`, `predict.EVICTS`; `predict` imports this module)."""


class Verdict(Protocol):
    """What this module reads and marks of a verdict (`predict.Verdict`)."""

    model: str
    verdict: str
    note: str
    races: list[str]
    in_order: bool | None


InOrder = Callable[[list[str], set[str]], set[str]]
"""(models in the order `up` creates them, models left out) -> those of the first that run."""
Empty = tuple[Session, dict[str, ModelJobs]]
"""A session of stuck models alone on the empty cluster, and their jobs."""


def new_models(state: ClusterState, spec: PlatformSpec) -> set[str]:
    """The stack's models with no pod on the cluster that the what-if counts (the platform's, not
    finished, as `whatif.workload` reads them), nor made again after a loss: the ones `up` creates."""
    on_cluster: set[tuple[str | None, str | None]] = set(state.remade_models)
    for pod in state.pods:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if labels.get(MANAGED_KEY) == MANAGED_VALUE and (pod.get("status") or {}).get("phase") not in FINISHED:
            on_cluster.add((metadata.get("namespace"), labels.get(MODEL_LABEL)))
    return {name for name, model in spec.models.items() if (model.namespace, name) not in on_cluster}


def without(spec: PlatformSpec, absent: set[str]) -> PlatformSpec:
    """The stack with the models `absent` not created yet (the change's other new models, for a
    model tried as the only new one)."""
    return replace(spec, models={n: m for n, m in spec.models.items() if n not in absent}) if absent else spec


def look_for_races(
    verdicts: Sequence[Verdict],
    state: ClusterState,
    spec: PlatformSpec,
    session: Session,
    models: dict[str, ModelJobs],
    empty: dict[str, Empty],
    in_order: InOrder,
) -> None:
    """Mark the change's new models that race (`races`, each waiting model tried as the only new
    one) and those whose fate differs when they come one at a time (`mark_in_order`); on a cluster
    small enough for the simulations that takes. `session`: the cluster after the change;
    `empty`: the stuck models alone on the empty cluster (`predict.on_an_empty_cluster`)."""
    if len(state.nodes) + len(state.pods) > RACE_CHECK_OBJECTS:
        return
    new = new_models(state, spec)
    placed = [name for name in spec.models if runs(session, models[name]) and model_tasks(session, models[name])]
    waiting = [
        name
        for name in spec.models
        if name not in placed and name in empty and runs(empty[name][0], empty[name][1][name])
    ]
    checks = race_checks(len(state.nodes) + len(state.pods))
    tried = races(spec, new, waiting, placed, lambda name: name in in_order([name], new - {name}), checks)
    mark_races(verdicts, tried)
    if not new <= set(placed):  # where every new model runs at once, one at a time is not tried
        mark_in_order(verdicts, in_stack_order(state, spec, new, in_order), new)


def race_checks(objects: int) -> int:
    """How many waiting models are tried on a cluster of `objects` nodes and pods: as many as
    `RACE_CHECK_WORK` allows, `RACE_CHECKS` at least. (A round of the real-cluster test, twenty
    independent changes in one stack, missed a race its fifth waiting model ran when four were
    tried.)"""
    return max(RACE_CHECKS, RACE_CHECK_WORK // max(objects, 1))


def races(
    spec: PlatformSpec,
    new: set[str],
    waiting: list[str],
    placed: list[str],
    runs_first: Callable[[str], bool],
    checks: int = RACE_CHECKS,
) -> dict[str, list[str]]:
    """Model -> the models it races with, both ways. `waiting`: new models that wait but would run
    on the empty cluster, the first `checks` of them tried; `placed`: new models that run;
    `runs_first(name)`: whether `name` runs as the only new model of the change."""
    placed = [name for name in placed if name in new]
    out: dict[str, set[str]] = {}
    if not placed:
        return {}
    for name in [n for n in waiting if n in new][:checks]:
        if not runs_first(name):
            continue
        queue = spec.models[name].queue
        rivals = [other for other in placed if spec.models[other].queue == queue] or placed
        out.setdefault(name, set()).update(rivals)
        for other in rivals:
            out.setdefault(other, set()).add(name)
    return {name: sorted(rivals) for name, rivals in out.items()}


def hold_in_order(session: Session, objects: Objects, models: dict[str, ModelJobs], order: list[str]) -> None:
    """Hold every model of `order` after the first back until the one before it has been placed:
    each a wave of its own, its PodGroups and pods together (`cluster.hold_in_waves`)."""
    objects.waves = hold_in_waves(session, [list(models[name].jobs) for name in order[1:]])


def cycles_in_order(base: int, order: list[str]) -> int:
    """The cycle budget of a run whose models of `order` arrive one at a time."""
    return base + CYCLES_PER_WAVE * max(len(order) - 1, 0)


def in_stack_order(state: ClusterState, spec: PlatformSpec, new: set[str], in_order: InOrder) -> set[str] | None:
    """The change's new models that run when `up` creates them one at a time in the stack's
    order; None where that is not looked for (fewer than two, or too much work)."""
    order = [name for name in spec.models if name in new]
    if len(order) < 2 or (len(state.nodes) + len(state.pods)) * len(order) > IN_ORDER_WORK:
        return None
    return in_order(order, set())


def mark_in_order(verdicts: Sequence[Verdict], running: set[str] | None, new: set[str]) -> None:
    """Note each new model whose fate differs when the models come one at a time (`running`)."""
    if running is None:
        return
    for verdict in verdicts:
        at_once = verdict.verdict in RUNNING_VERDICTS
        if verdict.model in new and (verdict.model in running) != at_once:
            verdict.in_order = not at_once
            said = "runs" if verdict.in_order else "waits"
            note = (
                f"{said} if `pulumi up` creates the change's new models far enough apart for Volcano to "
                "place each before the next arrives, in the order the stack declares them"
            )
            verdict.note = "; ".join(n for n in (verdict.note, note) if n)


def mark_races(verdicts: Sequence[Verdict], found: dict[str, list[str]]) -> None:
    for verdict in verdicts:
        if verdict.model in found:
            verdict.races = found[verdict.model]
            verdict.note = "; ".join(n for n in (verdict.note, race_note(verdict.races)) if n)


def race_note(rivals: list[str]) -> str:
    """What the report says of a model that races."""
    names = ", ".join(f"`{r}`" for r in rivals)
    return (
        f"races with {names}: the change creates them together and Volcano places whichever it meets "
        "first, so which one waits is the order `pulumi up` creates them in"
    )
