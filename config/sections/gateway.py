"""`gateway`, `tenants.<t>.gateway`, `models.<m>.gateway`: an inference-aware route per model.

A model with `gateway.enabled` gets an `InferencePool` selecting exactly its serving pods, an
endpoint picker of its own (llm-d's router: it scores the replicas by queue depth, KV-cache use and
prefix hits, and holds requests in priority bands while the replicas are busy or none is up), and an
`HTTPRoute` per consuming tenant on the shared Gateway. A tenant's requests are ordered by the
PriorityClass that orders its gangs in Volcano: the classes are ranked, and each rank is a band of
the router's flow control (docs/operations.md, "The inference gateway").
"""

from typing import Annotated, Literal

from pydantic import Field

from config.schema.base import ConfigModel
from config.schema.names import DnsLabel, DnsSubdomain, GatewayHostname, ImageReference, PriorityClassName, TenantName
from config.schema.quantity import Quantity


class SharedGatewayConfig(ConfigModel):
    """The Gateway (`gateway.networking.k8s.io/v1`) every model's routes attach to."""

    name: DnsSubdomain = "inference"
    """Gateway name."""
    namespace: DnsLabel = "inference-gateway"
    """Its namespace (created by the stack unless `existing`): not a tenant's, nor a system one."""
    existing: bool = False
    """The Gateway exists (made by the team that runs the gateway) and the stack only attaches
    routes to it: it must have a listener per consuming tenant's hostname, `t-<tenant>` for the
    first, `t-<tenant>-1`, ... for the others (preflight checks)."""
    port: Annotated[int, Field(ge=1, le=65535)] = 80
    """Port of the HTTP listeners the stack creates, one per consuming tenant's hostname."""


class FlowControlConfig(ConfigModel):
    """The router's flow control: requests wait in priority bands instead of being sent to a
    saturated replica, or while the model has no replica (scale from zero)."""

    enabled: bool = True
    """Turn it on (upstream's default is off). Off with a model that scales to zero is refused:
    its first requests would find no replica and fail."""
    queue_timeout_seconds: Annotated[int, Field(ge=1, le=3600)] | None = None
    """How long a request may wait (`defaultRequestTTL`). Default: the longest wake of the models
    that sleep at zero (a scrape, a KEDA poll, 120 s for the scale-up, and the load budget
    `startup.loadTimeoutSeconds`), at least 60 s. (The router sets none: a request would wait
    until the gateway's own timeout.)"""
    fairness: Literal["round-robin", "strict"] = "round-robin"
    """Within one band: `round-robin` takes the tenants' requests in turn (fairness ID = tenant);
    `strict` serves the oldest request first whoever sent it."""
    max_bytes_per_band: Annotated[int, Field(ge=1)] | None = None
    """Most request bytes one band holds before new requests are rejected. Default: upstream's
    (1 GB per band)."""


class RouterConfig(ConfigModel):
    """The endpoint picker each model behind the gateway gets."""

    image: ImageReference | None = None
    """Router image. Default: `ghcr.io/llm-d/llm-d-inference-scheduler:v0.7.1`, under
    `cluster.mirror.registry` when set. Another tag must be that release's image: the config it
    reads is the one the stack writes for v0.7.1."""
    replicas: Annotated[int, Field(ge=1, le=1)] = 1
    """Routers per model, or per slice of a model with prefill and decode apart. One: the queue of
    held requests lives in the router's memory, and two routers would keep two queues (leader
    election is not rendered). A model in slices has a router, and so a queue, per slice."""
    cpu: Quantity = "2"
    """CPU the router requests (and is limited to)."""
    memory: Quantity = "4Gi"
    """Memory the router requests (and is limited to)."""
    failure_mode: Literal["FailOpen", "FailClose"] = "FailClose"
    """What the gateway does when the router does not answer: `FailClose` refuses the request;
    `FailOpen` sends it to any replica, past the queue and the priorities."""
    flow_control: FlowControlConfig = FlowControlConfig()
    """Priority bands and the queue that holds requests."""
    tls: bool = True
    """The router takes the gateway's ext-proc calls over TLS, with the certificate it makes
    itself at start (the Inference Extension's default, `--secure-serving`). Envoy AI Gateway,
    kgateway and agentgateway connect with TLS and do not verify it (the Inference Extension gives
    them no CA to verify with); with `className: istio` the stack adds the DestinationRule that
    makes Istio originate TLS to the router, as the extension's chart does. `false`: plain HTTP/2
    (`appProtocol: kubernetes.io/h2c`), for a mesh that encrypts on its own. Either way only the
    gateway's namespace reaches the port (`networkPolicies`)."""


class GatewayConfig(ConfigModel):
    """The shared inference gateway."""

    class_name: DnsSubdomain | None = None
    """GatewayClass of the Gateway the stack creates, e.g. `istio`, `agentgateway` or `nginx`
    (an implementation conformant with the Inference Extension; preflight checks it is
    Accepted). Needed unless `gateway.gateway.existing`."""
    gateway: SharedGatewayConfig = SharedGatewayConfig()
    """The shared Gateway."""
    domain: DnsSubdomain | None = None
    """Tenant hostnames default to `<tenant>.<domain>`; needed when a consuming tenant sets no
    `gateway.hostnames`."""
    router: RouterConfig = RouterConfig()
    """The endpoint picker every model behind the gateway gets."""
    tenant_headers: Literal["route", "client"] = "route"
    """Who sets the headers the router orders a request by: its objective
    (`x-gateway-inference-objective: <model>-<class>`) and fairness ID
    (`x-gateway-inference-fairness-id: <tenant>`). `route`: each tenant's route sets them,
    overwriting what a client sent, which works only where the implementation applies a route's
    header filter before it calls the router; Envoy-based gateways (Istio, Envoy Gateway, kgateway)
    apply it when they forward the request, after, so the router reads what the client sent
    (preflight warns). `client`: the stack sets nothing, and a proxy in front of the gateway that
    knows each caller's tenant sets them."""
    baseline_priority_class: PriorityClassName | None = None
    """The PriorityClass whose requests are band 0; classes above it are bands 1, 2, ... in the
    order of their values, classes below it -1, -2, ... Default: the lowest class a consuming tenant
    uses, so no band is negative."""


class TenantGatewayConfig(ConfigModel):
    """How a tenant reaches the models it consumes through the gateway."""

    priority_class: PriorityClassName | None = None
    """The class that orders this tenant's requests at the gateway (its band). Default: the class
    of the tenant's own models when they all have one, else the baseline. A tenant file may name
    only a class its `tenantPolicy` grants."""
    hostnames: Annotated[tuple[GatewayHostname, ...], Field(max_length=16)] = ()
    """The tenant's hostnames on the Gateway, at most 16 (an HTTPRoute's limit). Default:
    `<tenant>.<gateway.domain>`."""


class ModelGatewayConfig(ConfigModel):
    """This model behind the shared gateway."""

    enabled: bool = False
    """Serve the model through the gateway: an InferencePool, a router and a route per consumer."""
    consumers: tuple[TenantName, ...] | None = None
    """Tenants whose hostnames route to this model, each at its own band. Default: the model's
    tenant."""
