"""The NetworkPolicies that keep tenants apart (pure builders; `networkPolicies`).

Per tenant namespace:
- `volcano-platform-tenant` selects every pod but the routers and admits traffic from the
  tenant's own namespaces, from the gateway's namespace and the monitoring namespace to the port
  models serve and are scraped on (`http`: vLLM serves `/metrics` beside its API), and from the
  tenant's `allowFrom`;
- `volcano-platform-routers` selects the routers and admits the gateway to their ext-proc port and
  monitoring to their metrics port, nothing else (not even the tenant's own pods: a request that
  skips the gateway would skip its bands and consumers).
Per slice of a model with prefill and decode apart behind the gateway, `<model>-s<k>-decode`
limits its decode pods' egress to that slice's prefill pods (vLLM and the NIXL side channel), the
other decode pods of the slice (an instance of several nodes is one Ray cluster), DNS and, for
weights from the hub, `hubEgressCidrs`: the address a request's `x-prefiller-host-port` names can
be nothing else.

Namespaces are selected by `kubernetes.io/metadata.name`, which the API server sets to the name on
every create and update (kubernetes pkg/registry/core/namespace/strategy.go, `Canonicalize`), so no
one can label their namespace into another's policy. Policies only add up (a pod is admitted when
any policy selecting it admits the traffic), so each rule here is the whole of what it allows.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from config.platform_labels import MANAGED_BY, MODEL_LABEL, ROUTER_LABEL, SERVING_ROLE_LABEL, SLICE_LABEL
from config.sections.isolation.network_policies import NetworkPoliciesConfig
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec, TenantSpec
from config.upstream.kubernetes import NAMESPACE_NAME_LABEL

API_VERSION = "networking.k8s.io/v1"
TENANT_POLICY = "volcano-platform-tenant"
ROUTERS_POLICY = "volcano-platform-routers"
SERVING_PORT = "http"
"""The port models serve on and Prometheus scrapes (decode's sidecar takes the name)."""
NIXL_PORT = "nixl"
ROUTER_PORTS = ("grpc", "metrics")
"""The router's ext-proc and metrics ports (`components.gateway.router`)."""
NOT_PUBLIC = (
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "127.0.0.0/8",
)
"""Private, shared (CGNAT), link-local (cloud metadata) and loopback IPv4: left out of
`0.0.0.0/0` in the hub's egress."""
NOT_PUBLIC_V6 = ("fc00::/7", "fe80::/10", "::1/128")


def namespaces_peer(names: list[str] | tuple[str, ...]) -> dict[str, Any]:
    return {
        "namespaceSelector": {
            "matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(names)}]
        }
    }


def _metadata(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}


def gateway_namespace(spec: PlatformSpec) -> str | None:
    return spec.config.gateway.gateway.namespace if spec.gateway is not None and spec.config.gateway else None


def monitoring_namespace(spec: PlatformSpec) -> str | None:
    observability = spec.config.observability
    return observability.namespace if observability.enabled else None


def tenant_policy(spec: PlatformSpec, tenant: TenantSpec, namespace: str) -> dict[str, Any]:
    """Every pod of the namespace but the routers: the tenant's namespaces, the gateway and
    monitoring on the serving port, and `allowFrom`."""
    ingress: list[dict[str, Any]] = [{"from": [namespaces_peer(tenant.namespaces)]}]
    serving = [namespaces_peer([ns]) for ns in (gateway_namespace(spec), monitoring_namespace(spec)) if ns]
    if serving:
        ingress.append({"from": serving, "ports": [{"protocol": "TCP", "port": SERVING_PORT}]})
    allow = tenant.config.allow_from
    others: list[dict[str, Any]] = []
    if allow.namespaces:
        others.append(namespaces_peer(allow.namespaces))
    others += [{"ipBlock": {"cidr": cidr}} for cidr in allow.cidrs]
    if others:
        ingress.append({"from": others})
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": _metadata(TENANT_POLICY, namespace),
        "spec": {
            "podSelector": {"matchExpressions": [{"key": ROUTER_LABEL, "operator": "DoesNotExist"}]},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def routers_policy(spec: PlatformSpec, namespace: str) -> dict[str, Any]:
    """The namespace's routers: ext-proc from the gateway, metrics from monitoring."""
    ingress: list[dict[str, Any]] = []
    for peer, port in ((gateway_namespace(spec), ROUTER_PORTS[0]), (monitoring_namespace(spec), ROUTER_PORTS[1])):
        if peer is not None:
            ingress.append({"from": [namespaces_peer([peer])], "ports": [{"protocol": "TCP", "port": port}]})
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": _metadata(ROUTERS_POLICY, namespace),
        "spec": {
            "podSelector": {"matchExpressions": [{"key": ROUTER_LABEL, "operator": "Exists"}]},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def _slice_pods(model: ModelSpec, index: int, role: str) -> dict[str, Any]:
    return {"matchLabels": {MODEL_LABEL: model.name, SLICE_LABEL: str(index), SERVING_ROLE_LABEL: role}}


def decode_egress_policy(config: NetworkPoliciesConfig, model: ModelSpec, index: int) -> dict[str, Any]:
    """Where slice `index`'s decode pods may connect: its prefill pods, its other decode pods,
    DNS, and the hub (for weights from the hub)."""
    egress: list[dict[str, Any]] = [
        {
            "to": [{"podSelector": _slice_pods(model, index, "prefill")}],
            "ports": [{"protocol": "TCP", "port": SERVING_PORT}, {"protocol": "TCP", "port": NIXL_PORT}],
        },
        {"to": [{"podSelector": _slice_pods(model, index, "decode")}]},
        {
            "to": [namespaces_peer([config.dns_namespace])],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
    ]
    if model.config.source.hub is not None:
        egress.append(
            {
                "to": [{"ipBlock": hub_block(cidr)} for cidr in config.hub_egress_cidrs],
                "ports": [{"protocol": "TCP", "port": port} for port in config.hub_egress_ports],
            }
        )
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": _metadata(decode_egress_name(model.name, index), model.namespace),
        "spec": {"podSelector": _slice_pods(model, index, "decode"), "policyTypes": ["Egress"], "egress": egress},
    }


def decode_egress_name(model: str, index: int) -> str:
    return f"{model}-s{index}-decode"


def hub_block(cidr: str) -> dict[str, Any]:
    """An `ipBlock`; the whole address space leaves out what is not the public internet."""
    network = ipaddress.ip_network(cidr)
    if network.prefixlen != 0:
        return {"cidr": cidr}
    excluded = NOT_PUBLIC if network.version == 4 else NOT_PUBLIC_V6
    return {"cidr": cidr, "except": list(excluded)}


def namespace_policies(spec: PlatformSpec) -> list[dict[str, Any]]:
    """Every NetworkPolicy of the stack, tenant by tenant, namespace by namespace."""
    if not spec.config.network_policies.enabled:
        return []
    routed = {spec.models[name].namespace for name in (spec.gateway.models if spec.gateway is not None else ())}
    out: list[dict[str, Any]] = []
    for tenant in spec.tenants.values():
        for namespace in tenant.namespaces:
            out.append(tenant_policy(spec, tenant, namespace))
            if namespace in routed:
                out.append(routers_policy(spec, namespace))
    for model in spec.models.values():
        if model.disaggregated:
            out += [decode_egress_policy(spec.config.network_policies, model, i) for i in range(model.config.replicas)]
    return out
