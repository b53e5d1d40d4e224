"""Every state of a model the docs describe passes `check`: scaled to zero, autoscaled, able to
scale to zero, adopted. The deploy workflow runs `check` before `pulumi up`, so a state that failed
it would block a legitimate change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from offline.check import check_render
from tests.conftest import mutate, stack_raw

SEED = stack_raw("aicloud-a")
OBSERVED = stack_raw("aicloud-b")
LWS_MODEL, DEPLOY_MODEL = "qwen2-72b-tenanta", "qwen8b-preemptor"


def _autoscaled(name: str, minimum: int) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        model = raw["models"][name]
        model.pop("replicas", None)
        model["autoscaling"] = {
            "minReplicas": minimum,
            "maxReplicas": 2,
            "target": 5,
            **({"activation": {"query": 'sum(rate(gateway_requests_total{route="m"}[2m]))'}} if minimum == 0 else {}),
        }

    return change


STATES: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], None]]] = {
    "multi-node model at 0 replicas": (SEED, lambda r: r["models"][LWS_MODEL].update(replicas=0)),
    "single-node model at 0 replicas": (SEED, lambda r: r["models"][DEPLOY_MODEL].update(replicas=0)),
    "multi-node model autoscaled": (OBSERVED, _autoscaled("llama-70b", 1)),
    "multi-node model that may scale to zero": (OBSERVED, _autoscaled("llama-70b", 0)),
    "single-node model that may scale to zero": (OBSERVED, _autoscaled("qwen3-8b", 0)),
    "adopted workload, service and PodGroup": (
        SEED,
        lambda r: r["models"][LWS_MODEL].update(adopt=["workload", "service", "podGroup"]),
    ),
    "adopted Deployment and Service": (SEED, lambda r: r["models"][DEPLOY_MODEL].update(adopt=["workload", "service"])),
}


@pytest.mark.parametrize("state", sorted(STATES))
def test_every_documented_state_of_a_model_passes_check(state: str, render_raw: Any) -> None:
    base, change = STATES[state]
    report = check_render(render_raw(mutate(base, change)))
    assert report.errors == [], f"{state}: {report.errors}"
