"""The what-if held to the real cluster, through the project's own path: generated rounds of twenty
cells each (`whatif_cells.py`) are set up for real (KWOK nodes, the API server, Volcano's scheduler
and controllers, LWS, the stack applied with `pulumi up`), recorded with `volcano-platform
snapshot`, answered with `whatif --from` by both engines, then applied with `pulumi up`; what
Volcano's scheduler did (each model's pods bound or not, which PodGroups lost pods to eviction) is
compared with the prediction, cell by cell. One cluster serves every round.

Victims compare by queue and priority (PodGroups alike in both are Volcano's order or a random tie);
of the models the what-if says race, as many must run as predicted, whichever they are.
The agreement is printed and must reach `MIN_AGREEMENT`; `bench/results.md` keeps the figures and
`docs/decisions.md` the causes of what disagrees.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.platform_labels import MODEL_LABEL
from sandbox.cluster import LocalCluster
from tests.e2e.conftest import start_cluster
from tests.e2e.whatif_cells import Cell, bound_pods, cell_nodes, in_stack_order, predicted_cells, round_of
from tests.e2e.whatif_stack import (
    ENGINES,
    Stack,
    beside,
    config,
    difference,
    new_stack,
    priorities,
    reset,
    settle,
    snapshot,
    up_past_queue_cache_lag,
    up_whatever_runs,
    whatif,
)

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
ROUNDS = int(os.environ.get("VP_WHATIF_ROUNDS", "3"))
"""Rounds of twenty cells: 60 scenarios in `make e2e`, on one cluster of 120 nodes (the first ten
cells of a round are those of the rounds of ten before)."""
MIN_AGREEMENT = 0.85
"""The floor this test holds: 58 of 60 cells agreed on both engines once the outcome of the models
created one at a time was compared too, 53 to 56 before (`bench/results.md`); what disagrees is
listed with its cause in docs/decisions.md ("The what-if against the real scheduler"). The aim is
0.95; the floor leaves room for the evictions the real scheduler makes one cycle at a time."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("whatif-cluster"), real_programs, cell_nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> Stack:
    return new_stack(cluster, real_programs, round_of(0))


def _observed(
    cells: list[Cell], before: list[dict[str, Any]], after: list[dict[str, Any]], priority_of: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """Per model of the change: whether all its pods are bound, and per cell the (queue, priority) of
    each PodGroup that lost a pod it had before the change."""
    alive = {p["metadata"]["uid"] for p in after if not p["metadata"].get("deletionTimestamp")}
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        lost: list[tuple[str, int]] = []
        for gang in cell.gangs:
            uids = {p["metadata"]["uid"] for p in before if p["metadata"].get("labels", {}).get("app") == gang.name}
            if uids - alive:
                lost.append((gang.queue, priority_of[gang.priority_class]))
        for name, model in cell.before.items():
            was = [p for p in before if p["metadata"].get("labels", {}).get(MODEL_LABEL) == name]
            now = [p for p in after if p["metadata"].get("labels", {}).get(MODEL_LABEL) == name]
            rolled = {_template(p) for p in now} - {_template(p) for p in was}  # a rollout, not an eviction
            if {p["metadata"]["uid"] for p in was} - alive and not rolled:
                lost.append((cell.tenant, priority_of[model["priorityClass"]]))
        for name, model in cell.after.items():
            out[name] = bound_pods(model, name, after)
        out[cell.name] = {"victims": sorted(lost)}
    return out


def _template(pod: dict[str, Any]) -> str:
    return pod["metadata"].get("labels", {}).get("pod-template-hash", "")


def _agrees(cell: Cell, predicted: dict[str, Any], observed: dict[str, Any]) -> str | None:
    """The outcome of the what-if the cluster ended as, if any: the same victims, and each model
    run or not as the what-if says for one order `up` may create the change's models in
    (`whatif/races.py`): `at once`, where of the models it says race as many run as predicted,
    whichever they are; or `in order` (one at a time in the stack's order), where a model's
    `inOrder` says how it ends."""
    if Counter(map(tuple, predicted[cell.name]["victims"])) != Counter(map(tuple, observed[cell.name]["victims"])):
        return None
    racing = {m for m in cell.after if predicted[m]["row"]["races"]}
    at_once = all(predicted[m]["runs"] == observed[m]["runs"] for m in cell.after if m not in racing)
    at_once &= sum(predicted[m]["runs"] for m in racing) == sum(observed[m]["runs"] for m in racing)
    if at_once:
        return "at once"
    return "in order" if all(in_stack_order(predicted[m]) == observed[m]["runs"] for m in cell.after) else None


def test_the_whatif_agrees_with_the_real_scheduler(cluster: LocalCluster, stack: Stack, tmp_path: Path) -> None:
    agreed: Counter[str] = Counter()
    differences: list[str] = []
    only_in_order: list[str] = []
    timings: list[float] = []
    for number in range(ROUNDS):
        started = time.monotonic()
        cells = round_of(number)
        reset(cluster)
        stack.switch(cluster, cells, after=False)
        up_past_queue_cache_lag(stack.pulumi)
        beside(cluster, cells)
        before = settle(cluster, quiet=3.0)
        stack.pulumi.write_config(config(cluster, cells, after=True))
        candidate, recorded = snapshot(cluster, stack.pulumi, tmp_path, f"round-{number}")
        answers = {engine: predicted_cells(whatif(candidate, recorded, engine), cells) for engine in ENGINES}
        up_whatever_runs(stack.pulumi)
        observed = _observed(cells, before, settle(cluster), priorities(cluster))
        for cell in cells:
            for engine in ENGINES:
                outcome = _agrees(cell, answers[engine], observed)
                if outcome == "in order":
                    only_in_order.append(f"round {number} cell {cell.name} ({engine})")
                if outcome is not None:
                    agreed[engine] += 1
                else:
                    label = f"round {number} cell {cell.name} ({engine})"
                    differences.append(difference(label, cell, answers[engine], observed, "verdict"))
        timings.append(time.monotonic() - started)
    total = ROUNDS * len(round_of(0))
    report = {engine: f"{agreed[engine]}/{total}" for engine in ENGINES}
    print(f"agreement with the real scheduler: {report}; seconds per round: {[round(t) for t in timings]}")
    print(f"cells the cluster ended as the models one at a time say: {only_in_order}")
    print("\n".join(differences))
    (Path(cluster.folder) / "agreement.json").write_text(
        json.dumps({"agreement": report, "inOrder": only_in_order, "differences": differences})
    )
    assert agreed["volcano"] >= MIN_AGREEMENT * total, "\n".join(differences)
