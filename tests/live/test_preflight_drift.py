"""Preflight of what changed on the cluster since the last `pulumi up`, by who changed it, and of
namespaces a removed tenant left behind."""

from __future__ import annotations

import copy
from typing import Any

from live.cluster_state import state_from_objects
from live.preflight import preflight
from offline.render import StackRender
from tests.conftest import stack_raw


def _live(render: StackRender, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The stack's objects of `kinds` as the cluster holds them after an `up`, each field of the
    stack's manager."""
    out = []
    for obj in render.rendered.objects:
        if obj.kind in kinds and not obj.patch:
            live = copy.deepcopy(obj.manifest)
            live["metadata"]["managedFields"] = [
                {
                    "manager": "pulumi-kubernetes-a1b2c3",
                    "operation": "Apply",
                    "fieldsV1": {"f:metadata": {"f:labels": {}}},
                }
            ]
            out.append(live)
    return out


def _changed(objects: list[dict[str, Any]], kind: str, name: str, manager: str, operation: str) -> None:
    """`spec.weight` of a Queue (or `spec.replicas` of a Deployment) changed by `manager`."""
    obj = next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)
    field = "weight" if kind == "Queue" else "replicas"
    obj["spec"][field] = 7
    obj["metadata"]["managedFields"].append(
        {"manager": manager, "operation": operation, "fieldsV1": {"f:spec": {f"f:{field}": {}}}}
    )


def _findings(render: StackRender, objects: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    report = preflight(render.spec, render.rendered, state_from_objects(objects, "test"))
    return {(f.check, f.subject): f for f in report.findings}


def test_a_field_another_manager_holds_is_named_before_a_preview_fails_on_it(render_raw: Any) -> None:
    render = render_raw(stack_raw("aicloud-a"))
    objects = _live(render, ("Namespace", "Queue", "Deployment"))
    _changed(objects, "Queue", "tenanta", "ops-console", "Apply")
    finding = _findings(render, objects)[("drift-other-manager", "Queue tenanta")]
    assert finding.severity == "error" and "`ops-console`" in finding.message
    assert "spec.weight: 7 -> 2 (owned by ops-console)" in finding.details
    assert "cluster.forceFieldOwnership" in finding.fix


def test_with_forced_ownership_it_is_taken_back_and_only_said(render_raw: Any) -> None:
    raw = stack_raw("aicloud-a")
    raw["cluster"]["forceFieldOwnership"] = True
    render = render_raw(raw)
    objects = _live(render, ("Namespace", "Queue", "Deployment"))
    _changed(objects, "Deployment", "qwen8b-preemptor", "script", "Update")
    finding = _findings(render, objects)[("drift-other-manager", "Deployment a01/qwen8b-preemptor")]
    assert finding.severity == "warning" and "takes them back" in finding.message


def test_a_kubectl_edit_is_set_back_by_up_and_said_as_such(render_raw: Any) -> None:
    render = render_raw(stack_raw("aicloud-a"))
    objects = _live(render, ("Namespace", "Queue"))
    _changed(objects, "Queue", "tenanta", "kubectl-edit", "Update")
    finding = _findings(render, objects)[("drift", "Queue tenanta")]
    assert finding.severity == "warning" and "`pulumi up --refresh` sets it back" in finding.message
    assert not [check for check, _ in _findings(render, _live(render, ("Namespace", "Queue"))) if "drift" in check]


def test_a_namespace_a_removed_tenant_left_is_told_from_a_managed_one(render_raw: Any) -> None:
    """Queues go with their tenant, namespaces stay: a labelled namespace whose tenant has no queue
    was kept, and adding the tenant back needs it adopted."""
    render = render_raw(stack_raw("aicloud-a"))
    managed = _live(render, ("Namespace", "Queue"))
    assert not [f for f in _findings(render, managed) if f[0] == "exists-retained"]
    kept = [o for o in managed if not (o["kind"] == "Queue" and o["metadata"]["name"] == "tenanta")]
    finding = _findings(render, kept)[("exists-retained", "Namespace a01")]
    assert finding.severity == "error" and "tenants.tenanta.adopt: [namespaces]" in finding.fix
