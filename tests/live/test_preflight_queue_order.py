"""A change that lowers a parent queue together with its children: valid as an end state, refused
by Volcano's queue webhook in the order `pulumi up` applies it (parent first), as it was for real
(`tests/e2e/test_whatif_real.py`, before its rounds named their queues anew). Preflight says so."""

from __future__ import annotations

import copy
from typing import Any

from live.cluster_state import state_from_objects
from live.preflight import preflight
from tests.conftest import stack_raw


def _live_queues(render: Any) -> list[dict[str, Any]]:
    return [copy.deepcopy(o.manifest) for o in render.rendered.by_kind("Queue") if not o.patch]


def _queue_order(render: Any, live: list[dict[str, Any]]) -> list[Any]:
    report = preflight(render.spec, render.rendered, state_from_objects(live, "test"))
    return [f for f in report.findings if f.check == "queue-order"]


def test_lowering_a_parent_with_its_children_is_two_ups(render_raw: Any) -> None:
    live = _live_queues(render_raw(stack_raw("aicloud-eks")))
    smaller = stack_raw("aicloud-eks")
    smaller["tenants"]["research"]["queue"].update(capability={"nvidia.com/gpu": 256}, deserved={"nvidia.com/gpu": 64})
    smaller["tenants"]["pretrain"]["queue"].update(capability={"nvidia.com/gpu": 256}, deserved={"nvidia.com/gpu": 32})
    smaller["tenants"]["alignment"]["queue"].update(deserved={"nvidia.com/gpu": 32})
    (finding,) = _queue_order(render_raw(smaller), live)
    assert finding.severity == "error" and finding.subject == "Queue research"
    assert "child `pretrain` has capability nvidia.com/gpu 384 now, above the new 256" in finding.message
    assert "its children's deserved nvidia.com/gpu is 256 now, above the new 64" in finding.message
    assert finding.fix.startswith("lower the children first")


def test_raising_a_parent_or_changing_nothing_is_one_up(render_raw: Any) -> None:
    live = _live_queues(render_raw(stack_raw("aicloud-eks")))
    assert _queue_order(render_raw(stack_raw("aicloud-eks")), live) == []
    bigger = stack_raw("aicloud-eks")
    bigger["tenants"]["research"]["queue"].update(capability={"nvidia.com/gpu": 1024})
    assert _queue_order(render_raw(bigger), live) == []
