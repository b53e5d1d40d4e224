"""Waiting for nodes apart from waiting for quota: a gang on an autoscaled pool that does not fit
the nodes there are is told how many nodes the pool must grow by, or that it never fits below the
pool's maximum."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from live.cluster_state import read_file
from offline.render import render_stack
from tests.conftest import PROJECT_DIR, stack_raw, write_stack
from whatif.pool_growth import grown, with_pool_growth
from whatif.predict import FITS, NEVER, WAITS, Prediction, Verdict, predict

pytestmark = pytest.mark.slow  # renders and reads a 91-node cluster several times

FRESH = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"


def _render(tmp_path: Path, change: Any) -> Any:
    raw = stack_raw("aicloud-eks")
    change(raw)
    stack = write_stack(tmp_path / "Pulumi.grow.yaml", raw)
    return render_stack(PROJECT_DIR, "grow", stack)


def _verdict(result: Any, model: str) -> Any:
    state = read_file(FRESH)
    prediction = with_pool_growth(
        predict(state, result.spec, result.rendered), state, result.spec, result.rendered, predict
    )
    return next(v for v in prediction.verdicts if v.model == model)


def test_a_model_that_needs_more_nodes_than_its_pool_has_now_waits_for_nodes(tmp_path: Path) -> None:
    result = _render(tmp_path, lambda raw: raw["models"]["qwen3-32b"].update(replicas=80))
    verdict = _verdict(result, "qwen3-32b")
    assert verdict.verdict == WAITS
    assert verdict.reason.startswith("waits for nodes: fits once pool `h100-b` grows by ")
    grow = int(verdict.reason.split("grows by ")[1].split(" ")[0])
    assert "(it has 16, at most 32)" in verdict.reason
    # The number is the fewest: one node fewer and it still waits, that many and it runs.
    state = read_file(FRESH)
    spec, rendered = result.spec, result.rendered
    assert (
        next(
            v for v in predict(grown(state, spec, "h100-b", grow), spec, rendered).verdicts if v.model == "qwen3-32b"
        ).verdict
        == FITS
    )
    assert (
        next(
            v
            for v in predict(grown(state, spec, "h100-b", grow - 1), spec, rendered).verdicts
            if v.model == "qwen3-32b"
        ).verdict
        == WAITS
    )


def test_a_model_beyond_its_pools_maximum_never_runs(tmp_path: Path) -> None:
    """The cluster's h100-b nodes offer 4 GPUs where the stack says 8: at its maximum of 32 nodes the
    pool holds 64 of the model's 80 replicas."""
    result = _render(tmp_path, lambda raw: raw["models"]["qwen3-32b"].update(replicas=80))
    state = read_file(FRESH)
    for node in state.nodes:
        if node["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") == "h100-b":
            node["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    prediction = with_pool_growth(
        predict(state, result.spec, result.rendered), state, result.spec, result.rendered, predict
    )
    verdict = next(v for v in prediction.verdicts if v.model == "qwen3-32b")
    assert verdict.verdict == NEVER
    assert verdict.reason.startswith("never: more than its pools hold at their maximum (`h100-b` at 32 node(s))")


@pytest.mark.parametrize(
    ("key", "said"),
    [("tenants.chat.queue.capability", "waits for quota, not nodes"), ("models.qwen3-32b", "waits for room")],
)
def test_what_growth_does_not_change_is_told_by_the_key_the_reason_binds(tmp_path: Path, key: str, said: str) -> None:
    """Quota or not is the reason's key (`Verdict.key`), never a word in its text: a reason that
    quotes a `tenants.` key from the cluster's own message is not taken for quota."""
    result = _render(tmp_path, lambda raw: None)
    state = read_file(FRESH)
    waiting = Verdict("qwen3-32b", WAITS, reason="Volcano says: `tenants.chat is full`", key=key)
    prediction = predict(state, result.spec, result.rendered)
    prediction = dataclasses.replace(prediction, verdicts=[waiting])

    def unchanged(*_: Any) -> Prediction:
        return prediction

    (told,) = with_pool_growth(prediction, state, result.spec, result.rendered, unchanged).verdicts
    assert told.reason.startswith(said), told.reason
