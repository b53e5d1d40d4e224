"""The tenant boundary on the pod network, as a truth table over one render.

From a stack's rendered objects: the namespaces (labelled as the API server labels them), one pod
per pod template of every workload in a tenant namespace, a gateway pod, a Prometheus pod, a DNS
pod and a pod of a namespace that belongs to nobody; then the flows the isolation promises, each
with the verdict it must get (`offline.isolation.engine` asks the upstream matcher):

- a tenant's pods reach the tenant's own models; another tenant's pods, and a namespace nobody
  owns, reach none of them (unless `allowFrom` names them);
- the gateway reaches every model behind it on its serving port, and every router on ext-proc;
  Prometheus reaches every model's and router's metrics; nothing else reaches a router, not even
  its own tenant's pods;
- a decode pod reaches its own slice's prefill pods (vLLM, NIXL) and DNS, and nothing else: not
  another slice's prefill, not another tenant's vLLM, not the API server, not the cloud's metadata
  service, and the public internet only on the hub's ports when its weights come from the hub.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.isolation.network_policies import gateway_namespace, monitoring_namespace
from config.checks.tenancy.provenance import pod_templates
from config.platform_labels import MODEL_LABEL, ROUTER_LABEL, SERVING_ROLE_LABEL, SLICE_LABEL
from config.spec.platform import PlatformSpec
from config.upstream.kubernetes import NAMESPACE_NAME_LABEL

OUTSIDER_NAMESPACE = "nobodys"
API_SERVER = "10.96.0.1"
METADATA_SERVICE = "169.254.169.254"
PUBLIC_ADDRESS = "203.0.113.10"
"""TEST-NET-3: an address of the public internet that is nobody's."""


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    labels: Mapping[str, str]
    ports: Mapping[str, int] = field(default_factory=dict)
    """Container port name -> number."""
    template: Mapping[str, Any] = field(default_factory=dict)
    ip: str = ""
    """Its address on the pod network (policies' `ipBlock`s are matched against pods' addresses too)."""

    def peer(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "labels": dict(self.labels), "ip": self.ip}

    @property
    def model(self) -> str | None:
        return self.labels.get(MODEL_LABEL)

    @property
    def router(self) -> bool:
        return ROUTER_LABEL in self.labels


@dataclass(frozen=True)
class Flow:
    name: str
    source: Mapping[str, Any]
    target: Mapping[str, Any]
    port: int
    port_name: str | None
    protocol: str
    allowed: bool
    """The verdict the isolation promises."""

    def question(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "from": dict(self.source),
            "to": dict(self.target),
            "port": self.port,
            "protocol": self.protocol,
        }
        if self.port_name:
            out["portName"] = self.port_name
        return out


@dataclass
class Table:
    namespaces: dict[str, dict[str, str]]
    policies: list[Mapping[str, Any]]
    pods: list[Pod]
    flows: list[Flow] = field(default_factory=list)

    def add(
        self,
        name: str,
        source: Pod | Mapping[str, Any],
        target: Pod | Mapping[str, Any],
        port: int | str,
        allowed: bool,
        protocol: str = "TCP",
    ) -> None:
        """A flow to `target`'s port (its name, resolved on the target pod, or a number)."""
        src = source.peer() if isinstance(source, Pod) else dict(source)
        if isinstance(target, Pod):
            number = target.ports[port] if isinstance(port, str) else port
            name_of = port if isinstance(port, str) else None
            self.flows.append(Flow(name, src, target.peer(), number, name_of, protocol, allowed))
        else:
            assert isinstance(port, int)
            self.flows.append(Flow(name, src, dict(target), port, None, protocol, allowed))


def pod_address(index: int) -> str:
    """The `index`th address of the pod network (10.244.0.0/16)."""
    return f"10.244.{index // 250}.{index % 250 + 1}"


def truth_table(spec: PlatformSpec, objects: Iterable[Mapping[str, Any]]) -> Table:
    manifests = [o for o in objects if isinstance(o.get("metadata"), Mapping)]
    namespaces: dict[str, dict[str, str]] = {}
    for obj in manifests:
        if obj.get("kind") == "Namespace":
            name = obj["metadata"]["name"]
            namespaces[name] = {**(obj["metadata"].get("labels") or {}), NAMESPACE_NAME_LABEL: name}
    for extra in ("kube-system", OUTSIDER_NAMESPACE, *_infrastructure(spec)):
        namespaces.setdefault(extra, {NAMESPACE_NAME_LABEL: extra})
    tenant_of = {ns: t.name for t in spec.tenants.values() for ns in t.namespaces}
    pods = _addressed([pod for obj in manifests for pod in _pods(obj) if pod.namespace in tenant_of])
    policies = [o for o in manifests if o.get("kind") == "NetworkPolicy"]
    table = Table(namespaces, policies, pods)
    _flows(spec, table, tenant_of)
    return table


def _infrastructure(spec: PlatformSpec) -> list[str]:
    return [ns for ns in (gateway_namespace(spec), monitoring_namespace(spec)) if ns]


def _pods(obj: Mapping[str, Any]) -> list[Pod]:
    namespace = obj["metadata"].get("namespace") or ""
    found = []
    for where, template in pod_templates(obj):
        spec = template.get("spec") or {}
        ports = {
            p["name"]: int(p["containerPort"])
            for key in ("initContainers", "containers")
            for c in spec.get(key) or []
            for p in c.get("ports") or []
            if p.get("name")
        }
        labels = (template.get("metadata") or {}).get("labels") or {}
        name = f"{obj['kind']}/{namespace}/{obj['metadata']['name']}{where}"
        found.append(Pod(name, namespace, labels, ports, template))
    return found


def _addressed(pods: list[Pod]) -> list[Pod]:
    return [Pod(p.name, p.namespace, p.labels, p.ports, p.template, pod_address(i)) for i, p in enumerate(pods)]


def _flows(spec: PlatformSpec, table: Table, tenant_of: Mapping[str, str]) -> None:
    enabled = spec.config.network_policies.enabled
    servers = [p for p in table.pods if p.model and "http" in p.ports and not p.router]
    routers = [p for p in table.pods if p.router]
    gateway_ns, monitoring_ns = gateway_namespace(spec), monitoring_namespace(spec)
    outsider = {"namespace": OUTSIDER_NAMESPACE, "labels": {"app": "anything"}}
    behind_gateway = set(spec.gateway.models) if spec.gateway is not None else set()
    for server in servers:
        tenant = tenant_of[server.namespace]
        allow = spec.tenants[tenant].config.allow_from
        for client in servers:
            other = tenant_of[client.namespace]
            if client is server or _decode(client):
                continue  # a decode pod's egress is its own table (below)
            admitted = other == tenant or client.namespace in allow.namespaces or not enabled
            table.add(f"{client.name} -> {server.name}", client, server, "http", admitted)
        table.add(
            f"{OUTSIDER_NAMESPACE} -> {server.name}",
            outsider,
            server,
            "http",
            not enabled or OUTSIDER_NAMESPACE in allow.namespaces,
        )
        if gateway_ns and server.model in behind_gateway:
            table.add(f"gateway -> {server.name}", {"namespace": gateway_ns, "labels": {}}, server, "http", True)
        if monitoring_ns:
            table.add(f"monitoring -> {server.name}", {"namespace": monitoring_ns, "labels": {}}, server, "http", True)
    for router in routers:
        if gateway_ns:
            table.add(
                f"gateway -> {router.name} ext-proc", {"namespace": gateway_ns, "labels": {}}, router, "grpc", True
            )
        if monitoring_ns:
            table.add(
                f"monitoring -> {router.name} metrics",
                {"namespace": monitoring_ns, "labels": {}},
                router,
                "metrics",
                True,
            )
        for client in servers:
            if not _decode(client):
                table.add(f"{client.name} -> {router.name} ext-proc", client, router, "grpc", not enabled)
        table.add(f"{OUTSIDER_NAMESPACE} -> {router.name} metrics", outsider, router, "metrics", not enabled)
    _decode_flows(spec, table, servers, tenant_of)


def _decode(pod: Pod) -> bool:
    return pod.labels.get(SERVING_ROLE_LABEL) == "decode"


def _decode_flows(spec: PlatformSpec, table: Table, servers: list[Pod], tenant_of: Mapping[str, str]) -> None:
    enabled = spec.config.network_policies.enabled
    config = spec.config.network_policies
    for decode in (p for p in servers if p.labels.get(SERVING_ROLE_LABEL) == "decode"):
        model = spec.models[decode.labels[MODEL_LABEL]]
        index = decode.labels.get(SLICE_LABEL)
        for prefill in (
            p for p in table.pods if p.model == model.name and p.labels.get(SERVING_ROLE_LABEL) == "prefill"
        ):
            own = prefill.labels.get(SLICE_LABEL) == index
            table.add(f"{decode.name} -> {prefill.name} vLLM", decode, prefill, "http", own or not enabled)
            table.add(f"{decode.name} -> {prefill.name} NIXL", decode, prefill, "nixl", own or not enabled)
        for other in servers:
            if other is decode or (other.labels.get(SERVING_ROLE_LABEL) == "prefill" and other.model == model.name):
                continue
            same_slice = _decode(other) and other.model == model.name and other.labels.get(SLICE_LABEL) == index
            table.add(f"{decode.name} -> {other.name}", decode, other, "http", same_slice or not enabled)
        dns = {"namespace": config.dns_namespace, "labels": {"k8s-app": "kube-dns"}}
        table.add(f"{decode.name} -> DNS", decode, dns, 53, True, protocol="UDP")
        table.add(f"{decode.name} -> API server", decode, {"ip": API_SERVER}, 443, not enabled)
        table.add(f"{decode.name} -> metadata service", decode, {"ip": METADATA_SERVICE}, 80, not enabled)
        hub = model.config.source.hub is not None and "0.0.0.0/0" in config.hub_egress_cidrs
        table.add(
            f"{decode.name} -> the public internet on 443", decode, {"ip": PUBLIC_ADDRESS}, 443, hub or not enabled
        )
        table.add(f"{decode.name} -> the public internet on 80", decode, {"ip": PUBLIC_ADDRESS}, 80, not enabled)
