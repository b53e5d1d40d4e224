"""The gateway against the cluster: its GatewayClass is there and Accepted, an existing Gateway has
a listener for every consuming tenant, and each model's pool is accepted by the Gateway that routes
to it (Gateway API `GatewayClass`/`Gateway` conditions; the Inference Extension's
`InferencePool.status.parents[].conditions`, api/v1/inferencepool_types.go)."""

from __future__ import annotations

import json
from typing import Any

from components.gateway.names import listener_names
from config.spec.platform import PlatformSpec
from config.upstream.inference_gateway import ENVOY_CONTROLLERS
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report
from offline.markdown import code


def check_gateway(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    gateway = spec.gateway
    if gateway is None or state.crd("gatewayclasses.gateway.networking.k8s.io") is None:
        return  # no gateway, or the missing CRDs are reported by check_prerequisites
    shared = gateway.config.gateway
    # Each kind is checked when the input holds it: a fresh cluster's dump has the implementation's
    # classes and no Gateway yet, and a class misspelt there is the stack's own error.
    unread = [kind for kind in ("GatewayClass", "Gateway") if kind not in state.listed]
    if unread:
        report.notes.append(
            f"the gateway's {' and '.join(unread)} {'are' if len(unread) > 1 else 'is'} not checked: the input "
            "holds none (add "
            "gatewayclasses.gateway.networking.k8s.io,gateways.gateway.networking.k8s.io to the dump)"
        )
    if "GatewayClass" in state.listed and not shared.existing and gateway.config.class_name is not None:
        _class(spec, gateway.config.class_name, state, report)
    if "Gateway" not in state.listed:
        return
    if shared.existing:
        _listeners(spec, state.find("Gateway", shared.name, shared.namespace), report)
    _client_headers(spec, state, report)
    for model in gateway.models:
        namespace = spec.models[model].namespace
        pool = state.find("InferencePool", model, namespace)
        if pool is not None:
            _pool(model, pool, report)


CLIENT_HEADERS = ("x-gateway-inference-objective", "x-gateway-inference-fairness-id", "x-prefiller-host-port")
"""Headers the router acts on that a client can send (GIE v1.4.0 pkg/epp/metadata/consts.go; llm-d
v0.7.1 pkg/common/common.go)."""


def _client_headers(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    """Say what keeps clients from choosing their own band, fairness ID and prefill address: a
    policy of the implementation that names the headers (removing them before the router runs), the
    routes (`tenantHeaders: route`, on a gateway that applies them first), or only the proxy in front."""
    assert spec.gateway is not None
    naming = {
        header: [
            _named(policy)
            for policy in state.header_policies
            if header in json.dumps(policy.get("spec"), default=str).lower()
        ]
        for header in CLIENT_HEADERS
    }
    policies = sorted({name for names in naming.values() for name in names})
    if policies:
        report.notes.append(
            "headers clients could set are named by the gateway's own policies ("
            + ", ".join(policies)
            + "): check that they remove "
            + ", ".join(f"`{h}`" for h, names in naming.items() if names)
            + " before the router reads them"
        )
    missing = [h for h, names in naming.items() if not names]
    if not missing:
        return
    held = "the routes set the band headers" if spec.gateway.config.tenant_headers == "route" else ""
    report.notes.append(
        "nothing in the cluster removes "
        + ", ".join(f"`{h}`" for h in missing)
        + " before the router reads them"
        + (f" ({held}, on a gateway that applies them before ext-proc)" if held else "")
        + ": the proxy in front of the gateway must be the only way in and drop what callers send; the "
        "prefill address is bounded by the decode pods' egress NetworkPolicy (docs/operations.md, "
        '"Tenant isolation")'
    )


def _named(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{obj.get('kind')} {metadata.get('namespace')}/{metadata.get('name')}"


def _items(value: Any) -> list[dict[str, Any]]:
    """The mappings of a list a dump holds; anything else in its place reads as none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of that type among an object's `status.conditions`, or a pool parent's own."""
    conditions = _items(obj.get("conditions")) or _items((obj.get("status") or {}).get("conditions"))
    return next((c for c in conditions if c.get("type") == kind), None)


def _class(spec: PlatformSpec, name: str, state: ClusterState, report: Report) -> None:
    found = state.find("GatewayClass", name)
    if found is None:
        known = sorted(str(c.get("metadata", {}).get("name")) for c in state.gateway_classes)
        report.add(
            Finding(
                "gateway-class-missing",
                "error",
                "gateway.className",
                f"the cluster has no GatewayClass `{name}` (it has {', '.join(known) or 'none'}); the Gateway "
                "would never be programmed",
                "install the gateway implementation, or name one of its classes",
            )
        )
        return
    controller = (found.get("spec") or {}).get("controllerName")
    if controller in ENVOY_CONTROLLERS and spec.config.gateway and spec.config.gateway.tenant_headers == "route":
        report.add(
            Finding(
                "gateway-headers-after-router",
                "warning",
                "gateway.tenantHeaders",
                f"GatewayClass {code(name)} is Envoy's ({code(str(controller))}): a route's header filter is applied "
                "when the "
                "request is forwarded, after the router has read the headers, so clients choose their own band "
                "and fairness ID",
                "put a proxy that knows each caller's tenant in front of the gateway and set `tenantHeaders: "
                "client`, or strip and set the headers with the implementation's own early header policy",
            )
        )
    accepted = _condition(found, "Accepted")
    if accepted is None or accepted.get("status") != "True":
        reason = (accepted or {}).get("reason", "no Accepted condition")
        report.add(
            Finding(
                "gateway-class-not-accepted",
                "error",
                "gateway.className",
                f"GatewayClass {code(name)} is not Accepted ({code(str(reason))}): its controller does not run or "
                "refuses it",
                "check the implementation's controller (`kubectl describe gatewayclass`)",
            )
        )


def _listeners(spec: PlatformSpec, live: dict[str, Any] | None, report: Report) -> None:
    assert spec.gateway is not None
    shared = spec.gateway.config.gateway
    if live is None:
        report.add(
            Finding(
                "gateway-missing",
                "error",
                "gateway.gateway.existing",
                f"Gateway `{shared.namespace}/{shared.name}` does not exist, and the stack only attaches routes to it",
                "create it first, or set `existing: false` so the stack creates it",
            )
        )
        return
    have = {str(item.get("name")) for item in _items((live.get("spec") or {}).get("listeners"))}
    wanted = spec.gateway.hostnames
    missing = sorted(n for t, hosts in wanted.items() for n in listener_names(t, hosts) if n not in have)
    if missing:
        report.add(
            Finding(
                "gateway-listener-missing",
                "error",
                "gateway.gateway",
                f"Gateway `{shared.namespace}/{shared.name}` has no listener {', '.join(missing)}; the routes of "
                "those tenants would not attach",
                "add the listeners (one per tenant hostname, named as listed), or let the stack create the Gateway",
            )
        )


def _pool(model: str, pool: dict[str, Any], report: Report) -> None:
    for parent in _items((pool.get("status") or {}).get("parents")):
        accepted = _condition(parent, "Accepted")
        if accepted is not None and accepted.get("status") == "False":
            found = parent.get("parentRef")
            ref: dict[str, Any] = found if isinstance(found, dict) else {}
            report.add(
                Finding(
                    "inference-pool-not-accepted",
                    "error",
                    f"models.{model}.gateway",
                    f"InferencePool `{model}` is not accepted by Gateway `{ref.get('namespace', '')}/"
                    f"{ref.get('name', '')}` ({accepted.get('reason', 'no reason')}: {accepted.get('message', '')})",
                    "fix what the reason names (NotSupportedByParent: the implementation does not serve "
                    "InferencePools; HTTPRouteNotAccepted: the route's listener refuses it)",
                )
            )
