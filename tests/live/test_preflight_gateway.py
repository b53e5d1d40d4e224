"""The gateway against a cluster: its CRDs, its GatewayClass Accepted, an existing Gateway's
listeners and each pool accepted by its Gateway, each reported at the stack key to change."""

from __future__ import annotations

from typing import Any

from live.cluster_state import state_from_objects
from live.preflight import preflight
from offline.render import StackRender
from tests.conftest import mutate, stack_raw

STACK = "aicloud-b"


def _crd(plural_group: str) -> dict[str, Any]:
    plural, group = plural_group.split(".", 1)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": plural_group},
        "spec": {"group": group, "names": {"plural": plural}, "versions": [{"name": "v1", "served": True}]},
    }


GATEWAY_CRDS = ["gatewayclasses.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io"]
ROUTER_CRDS = [
    "httproutes.gateway.networking.k8s.io",
    "inferencepools.inference.networking.k8s.io",
    "inferenceobjectives.inference.networking.x-k8s.io",
]


def _class(name: str, accepted: str, reason: str = "Accepted") -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {"controllerName": "istio.io/gateway-controller"},
        "status": {"conditions": [{"type": "Accepted", "status": accepted, "reason": reason}]},
    }


def _findings(render: StackRender, objects: list[dict[str, Any]], listed: bool = True) -> dict[str, str]:
    """Preflight's findings by key; `listed`: as a live read, which lists every kind the cluster
    serves (a dump holds only the kinds it was made with)."""
    state = state_from_objects(objects, "test")
    if listed:
        state.listed |= {"GatewayClass", "Gateway", "InferencePool"}
    report = preflight(render.spec, render.rendered, state)
    return {f.subject: f"{f.check}: {f.message}; {f.fix}" for f in report.findings}


def test_missing_crds_are_named_with_what_installs_them(committed_render: Any) -> None:
    findings = _findings(committed_render(STACK), [])
    assert "prerequisite-missing" in findings["gateway.networking.k8s.io"]
    assert "Inference Extension" in findings["inference.networking.k8s.io"]
    assert "InferenceObjective" in findings["inference.networking.x-k8s.io"]


def test_the_gateway_class_must_exist_and_be_accepted(committed_render: Any) -> None:
    render = committed_render(STACK)
    crds = [_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS]
    assert _findings(render, crds)["gateway.className"].startswith("gateway-class-missing")
    refused = _findings(render, [*crds, _class("istio", "False", "InvalidParameters")])
    assert "InvalidParameters" in refused["gateway.className"]
    assert "gateway.className" not in _findings(render, [*crds, _class("istio", "True")])


def test_an_existing_gateway_needs_a_listener_per_tenant_hostname(render_raw: Any) -> None:
    render = render_raw(mutate(stack_raw(STACK), lambda r: r["gateway"].update(gateway={"existing": True})))
    crds = [_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS]
    assert _findings(render, crds)["gateway.gateway.existing"].startswith("gateway-missing")
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "inference", "namespace": "inference-gateway"},
        "spec": {"gatewayClassName": "istio", "listeners": [{"name": "t-chat", "port": 80, "protocol": "HTTP"}]},
    }
    found = _findings(render, [*crds, gateway])
    assert "t-search" in found["gateway.gateway"] and "t-chat" not in found["gateway.gateway"]
    gateway["spec"]["listeners"].append({"name": "t-search", "port": 80, "protocol": "HTTP"})
    assert "gateway.gateway" not in _findings(render, [*crds, gateway])


def test_a_pool_its_gateway_refuses_is_reported_with_the_reason(committed_render: Any) -> None:
    render = committed_render(STACK)
    pool = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "qwen3-8b", "namespace": "chat"},
        "spec": {},
        "status": {
            "parents": [
                {
                    "parentRef": {"name": "inference", "namespace": "inference-gateway"},
                    "conditions": [{"type": "Accepted", "status": "False", "reason": "NotSupportedByParent"}],
                }
            ]
        },
    }
    crds = [_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS]
    found = _findings(render, [*crds, _class("istio", "True"), pool])
    assert "NotSupportedByParent" in found["models.qwen3-8b.gateway"]
    pool["status"]["parents"][0]["conditions"][0] |= {"status": "True", "reason": "Accepted"}
    assert "models.qwen3-8b.gateway" not in _findings(render, [*crds, _class("istio", "True"), pool])


def test_a_dump_without_the_gateway_kinds_is_not_a_missing_gateway(committed_render: Any) -> None:
    render = committed_render(STACK)
    state = state_from_objects([_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS], "dump")
    report = preflight(render.spec, render.rendered, state)
    assert not [f for f in report.findings if f.subject.startswith(("gateway.", "models."))]
    assert any("GatewayClass" in note for note in report.notes)


def test_a_misspelt_class_is_found_on_a_fresh_cluster_that_has_classes_and_no_gateway(committed_render: Any) -> None:
    """A fresh cluster's dump holds the implementation's GatewayClasses and no Gateway yet: the
    stack's class is checked against them all the same."""
    render = committed_render(STACK)
    state = state_from_objects([*(_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS), _class("istio-typo", "True")], "dump")
    report = preflight(render.spec, render.rendered, state)
    (finding,) = [f for f in report.findings if f.subject == "gateway.className"]
    assert finding.check == "gateway-class-missing" and "istio-typo" in finding.message
    assert any("Gateway is not checked" in note for note in report.notes)


def test_route_headers_on_an_envoy_gateway_are_warned_about(committed_render: Any, render_raw: Any) -> None:
    """Envoy adds a route's headers when it forwards, after the router has read them."""
    render = render_raw(mutate(stack_raw(STACK), lambda r: r["gateway"].update(tenantHeaders="route")))
    crds = [_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS]
    found = _findings(render, [*crds, _class("istio", "True")])
    assert found["gateway.tenantHeaders"].startswith("gateway-headers-after-router")
    assert "gateway.tenantHeaders" not in _findings(committed_render(STACK), [*crds, _class("istio", "True")])


def test_odd_shapes_in_a_dump_read_as_nothing_not_a_crash(committed_render: Any) -> None:
    """A list where a dump holds a number or a string (listeners, conditions, a pool's parents)."""
    odd_class = {**_class("istio", "True"), "status": {"conditions": 7}}
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "inference", "namespace": "inference-gateway"},
        "spec": {"listeners": 3},
    }
    pool = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "qwen3-8b", "namespace": "chat"},
        "spec": {},
        "status": {"parents": "accepted"},
    }
    crds = [_crd(n) for n in GATEWAY_CRDS + ROUTER_CRDS]
    found = _findings(committed_render(STACK), [*crds, odd_class, gateway, pool])
    assert found["gateway.className"].startswith("gateway-class-not-accepted")
    assert "models.qwen3-8b.gateway" not in found


def _notes(render: StackRender, objects: list[dict[str, Any]]) -> list[str]:
    state = state_from_objects(objects, "test")
    state.listed |= {"GatewayClass", "Gateway", "InferencePool"}
    return preflight(render.spec, render.rendered, state).notes


def test_preflight_says_what_removes_the_headers_clients_could_set(committed_render: Any) -> None:
    """The band, fairness and prefill headers: named by one of the implementation's own policies,
    or removed by nothing in the cluster (the proxy in front must then be the only way in)."""
    render = committed_render(STACK)
    base = [_crd(name) for name in GATEWAY_CRDS + ROUTER_CRDS] + [_class("istio", "True")]
    (nothing,) = [n for n in _notes(render, base) if "removes" in n]
    assert nothing.startswith("nothing in the cluster removes `x-gateway-inference-objective`")
    assert "x-prefiller-host-port" in nothing and "egress NetworkPolicy" in nothing
    early = {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "ClientTrafficPolicy",
        "metadata": {"name": "strip", "namespace": "inference-gateway"},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference"}],
            "headers": {
                "earlyRequestHeaders": {"remove": ["x-gateway-inference-objective", "x-gateway-inference-fairness-id"]}
            },
        },
    }
    notes = [n for n in _notes(render, [*base, early]) if "removes" in n or "named by" in n]
    assert any("ClientTrafficPolicy inference-gateway/strip" in n for n in notes)
    (rest,) = [n for n in notes if n.startswith("nothing")]
    assert "`x-prefiller-host-port`" in rest and "objective" not in rest
