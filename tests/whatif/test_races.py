"""New models of one change that do not all fit race: `up` creates them over seconds and Volcano
places whichever it meets first, so the what-if names the race instead of one order's outcome
(`whatif/races.py`; found on the real cluster, `tests/e2e/test_whatif_real.py`). Both engines."""

from __future__ import annotations

from typing import Any

import pytest

from live.cluster_state import ClusterState, state_from_objects
from tests.e2e.stacks import dev_nodes
from tests.whatif.test_never_alone import answer_of, two_models
from whatif.predict import FITS, WAITS, Verdict
from whatif.races import (
    RACE_CHECK_OBJECTS,
    RACE_CHECK_WORK,
    RACE_CHECKS,
    mark_in_order,
    new_models,
    race_checks,
    races,
)


class _Spec:
    """Only what `races` reads of a stack: each model's queue."""

    def __init__(self, queues: dict[str, str]) -> None:
        self.models = {name: type("Model", (), {"queue": queue})() for name, queue in queues.items()}


def test_a_waiting_model_that_runs_first_races_with_the_placed_models_of_its_queue() -> None:
    spec: Any = _Spec({"a": "q1", "b": "q1", "c": "q2", "old": "q1"})
    found = races(spec, {"a", "b", "c"}, ["b"], ["a", "c", "old"], lambda name: True)
    assert found == {"b": ["a"], "a": ["b"]}


def test_a_waiting_model_with_no_rival_in_its_queue_races_with_every_new_model_placed() -> None:
    spec: Any = _Spec({"a": "q1", "b": "q2", "c": "q3"})
    assert races(spec, {"a", "b", "c"}, ["c"], ["a", "b"], lambda name: True) == {
        "c": ["a", "b"],
        "a": ["c"],
        "b": ["c"],
    }


def test_no_race_where_the_model_waits_even_first_or_nothing_new_was_placed() -> None:
    spec: Any = _Spec({"a": "q1", "b": "q1", "old": "q1"})
    assert races(spec, {"a", "b"}, ["b"], ["a"], lambda name: False) == {}
    assert races(spec, {"b"}, ["b"], ["old"], lambda name: True) == {}


def test_at_most_race_checks_waiting_models_are_tried() -> None:
    names = [f"m{i}" for i in range(RACE_CHECKS + 3)]
    spec: Any = _Spec({**dict.fromkeys(names, "q1"), "placed": "q1"})
    tried: list[str] = []

    def runs_first(name: str) -> bool:
        tried.append(name)
        return True

    races(spec, {*names, "placed"}, names, ["placed"], runs_first)
    assert tried == names[:RACE_CHECKS]
    tried.clear()
    races(spec, {*names, "placed"}, names, ["placed"], runs_first, checks=race_checks(500))
    assert tried == names


def test_a_smaller_cluster_has_more_waiting_models_tried_for_the_same_work() -> None:
    assert race_checks(RACE_CHECK_OBJECTS) == RACE_CHECKS
    assert race_checks(500) == RACE_CHECK_WORK // 500 > RACE_CHECKS
    assert race_checks(0) == RACE_CHECK_WORK


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_two_new_models_that_do_not_both_fit_the_quota_race(render_raw: Any, engine: str) -> None:
    render = render_raw(two_models(capability=2, replicas=1))  # one pod of two GPUs each: 2 of the queue's 2
    nodes = [{"apiVersion": "v1", "kind": "Node", **node} for node in dev_nodes()]
    verdicts = {
        v.model: v for v in answer_of(engine)(state_from_objects(nodes, "empty"), render.spec, render.rendered).verdicts
    }
    assert sorted(v.verdict for v in verdicts.values()) == [FITS, WAITS], verdicts
    assert verdicts["first"].races == ["second"] and verdicts["second"].races == ["first"], verdicts
    waiting = next(v for v in verdicts.values() if v.verdict == WAITS)
    assert "the order `pulumi up` creates them in" in waiting.note


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_every_waiting_model_of_a_change_of_many_is_tried_for_a_race(render_raw: Any, engine: str) -> None:
    """Six new models of one pod of two GPUs in a queue of two: one runs and five wait, each of which
    would run as the change's only new model, so each races with the one placed. Only four used to
    be tried; cell 15 of rounds 0 and 1 of the real-cluster differential was a race past the fourth."""
    raw = two_models(capability=2, replicas=1)
    template = raw["models"].pop("first")
    raw["models"].pop("second")
    names = [f"m{i}" for i in range(RACE_CHECKS + 2)]
    for name in names:
        raw["models"][name] = {**template, "serviceName": name}
    render = render_raw(raw)
    nodes = [{"apiVersion": "v1", "kind": "Node", **node} for node in dev_nodes()]
    verdicts = {
        v.model: v for v in answer_of(engine)(state_from_objects(nodes, "empty"), render.spec, render.rendered).verdicts
    }
    placed = [name for name in names if verdicts[name].verdict == FITS]
    assert len(placed) == 1, verdicts
    assert all(verdicts[name].races == placed for name in names if name not in placed), verdicts
    assert verdicts[placed[0]].races == sorted(set(names) - set(placed)), verdicts


def _three_models() -> dict[str, Any]:
    """The dev stack (four nodes of two GPUs) with a queue of six GPUs and three new models: `a`
    (two pods) and `b` (one pod) of p2-normal that may not be preempted, declared first, and `c`
    (two pods) of p1-high, declared last; two GPUs a pod."""
    raw = two_models(capability=6, replicas=1)
    first = raw["models"].pop("first")
    raw["models"].pop("second")
    for name, replicas, priority in (("a", 2, "p2-normal"), ("b", 1, "p2-normal"), ("c", 2, "p1-high")):
        raw["models"][name] = {
            **first,
            "replicas": replicas,
            "serviceName": name,
            "priorityClass": priority,
            "preemptable": priority != "p2-normal",
        }
    return raw


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_models_created_one_at_a_time_in_the_stack_order_can_end_otherwise(render_raw: Any, engine: str) -> None:
    """All at once Volcano takes `c` first (its priority), then one pod of `a` (a Deployment's pods
    are placed one by one), and the quota is full: `a` and `b` wait. If `up` creates them far
    enough apart, `a` and `b` fill the queue before `c` arrives, and `c` may preempt neither:
    round 0 cell 5 of the real-cluster differential, where the cluster did the latter."""
    render = render_raw(_three_models())
    nodes = [{"apiVersion": "v1", "kind": "Node", **node} for node in dev_nodes()]
    verdicts = {
        v.model: v for v in answer_of(engine)(state_from_objects(nodes, "empty"), render.spec, render.rendered).verdicts
    }
    assert {name: v.verdict for name, v in verdicts.items()} == {"a": WAITS, "b": WAITS, "c": FITS}, verdicts
    assert {name: v.in_order for name, v in verdicts.items()} == {"a": True, "b": True, "c": False}, verdicts
    assert "waits if `pulumi up` creates the change's new models far enough apart" in verdicts["c"].note


def test_only_new_models_whose_fate_differs_in_order_are_marked() -> None:
    verdicts = [Verdict("a", WAITS), Verdict("b", FITS), Verdict("old", WAITS), Verdict("c", FITS)]
    mark_in_order(verdicts, {"a", "b", "old"}, {"a", "b", "c"})
    assert [v.in_order for v in verdicts] == [True, None, None, False]
    assert verdicts[0].note.startswith("runs if `pulumi up` creates")
    mark_in_order(verdicts[1:2], None, {"b"})  # not looked for: nothing said
    assert verdicts[1].in_order is None and not verdicts[1].note


def test_models_a_loss_makes_again_are_not_new() -> None:
    """`whatif --lose` takes a model's lost pods off the cluster and makes them again as their
    controller would; such a model is not one `up` creates, so neither races nor arrives in
    order (it did: the in-order run held a job whose LeaderWorkerSet pods were already held)."""
    spec: Any = type("Spec", (), {"models": {n: type("Model", (), {"namespace": "t"})() for n in ("a", "b")}})()
    assert new_models(ClusterState(), spec) == {"a", "b"}
    assert new_models(ClusterState(remade_models={("t", "a")}), spec) == {"b"}
