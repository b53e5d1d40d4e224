"""New models of one change that race for the same room.

The what-if places a change's models all at once, in Volcano's order (priority, then creation).
`pulumi up` creates them over seconds, and Volcano's scheduler, running every second, places
whichever it meets first; so where the change's new models do not all fit, which of them waits is
the order of `up` (found on the real cluster: `tests/e2e/test_whatif_real.py`, three cells of 60).
A new model that waits, but runs when it is the only new model of the change, races with the new
models that took its room: those placed in its queue, or, where none is, every new model placed.
Both outcomes are the scheduler's; the report says so rather than picking one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from config.platform_labels import MODEL_LABEL
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from whatif.workload import FINISHED, MANAGED_KEY, MANAGED_VALUE

RACE_CHECKS = 4
"""Waiting models tried first, at most: each is one more simulation of the whole cluster."""


def new_models(state: ClusterState, spec: PlatformSpec) -> set[str]:
    """The stack's models with no pod on the cluster that the what-if counts (the platform's, not
    finished, as `whatif.workload` reads them): the ones `up` creates."""
    on_cluster = set()
    for pod in state.pods:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if labels.get(MANAGED_KEY) == MANAGED_VALUE and (pod.get("status") or {}).get("phase") not in FINISHED:
            on_cluster.add((metadata.get("namespace"), labels.get(MODEL_LABEL)))
    return {name for name, model in spec.models.items() if (model.namespace, name) not in on_cluster}


def alone_of_the_new(spec: PlatformSpec, name: str, new: set[str]) -> PlatformSpec:
    """The stack with `name` the only new model: the change's other new models not created yet."""
    return replace(spec, models={n: m for n, m in spec.models.items() if n == name or n not in new})


def races(
    spec: PlatformSpec, new: set[str], waiting: list[str], placed: list[str], runs_first: Callable[[str], bool]
) -> dict[str, list[str]]:
    """Model -> the models it races with, both ways. `waiting`: new models that wait but would run
    on the empty cluster; `placed`: new models that run; `runs_first(name)`: whether `name` runs
    as the only new model of the change."""
    placed = [name for name in placed if name in new]
    out: dict[str, set[str]] = {}
    if not placed:
        return {}
    for name in [n for n in waiting if n in new][:RACE_CHECKS]:
        if not runs_first(name):
            continue
        queue = spec.models[name].queue
        rivals = [other for other in placed if spec.models[other].queue == queue] or placed
        out.setdefault(name, set()).update(rivals)
        for other in rivals:
            out.setdefault(other, set()).add(name)
    return {name: sorted(rivals) for name, rivals in out.items()}


def race_note(rivals: list[str]) -> str:
    """What the report says of a model that races."""
    names = ", ".join(f"`{r}`" for r in rivals)
    return (
        f"races with {names}: the change creates them together and Volcano places whichever it meets "
        "first, so which one waits is the order `pulumi up` creates them in"
    )
