"""The inference gateway as the stack resolves it: who consumes which model, at which band.

A tenant's requests are ordered at the gateway by the PriorityClass that orders its gangs in
Volcano. The router compares integer priorities and serves a higher one first, always; fairness
applies only between requests of one priority (gateway-api-inference-extension v1.4.0
`apix/v1alpha2/inferenceobjective_types.go`). PriorityClass values are arbitrary, so classes are
ranked, not copied: the baseline class is band 0, each higher value one band up, each lower one
band down. Classes of equal value share a band.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from config.sections.gateway import GatewayConfig
from config.sections.priority import PriorityClassConfig
from config.sections.stack import StackConfig
from config.spec.model import ModelSpec
from config.upstream.inference_gateway import QUEUE_SIZE_METRIC, ROUTER_SUFFIX

DEFAULT_QUEUE_TIMEOUT_SECONDS = 60
"""The wait when no model wakes from zero. The router itself sets none (v1.4.0
`pkg/epp/flowcontrol/controller/config.go`: a zero `DefaultRequestTTL` waits until the client or
the gateway gives up), so a request would hold a queue slot for as long as the gateway's timeout."""
WAKE_MARGIN_SECONDS = 120
"""Beyond the scrape, the poll and the load: the scale-up itself, scheduling the pod, starting its
containers from an image on the node."""
GENERATION_SECONDS = 300
"""What a route allows a request beyond its wait in the queue (the upstream chart's route timeout)."""


@dataclass(frozen=True)
class Consumer:
    """One tenant reaching one model through the gateway."""

    tenant: str
    priority_class: str
    band: int
    hostnames: tuple[str, ...]


@dataclass(frozen=True)
class GatewaySpec:
    config: GatewayConfig
    baseline: str
    """The class of band 0."""
    bands: dict[str, int]
    """Every PriorityClass of the stack -> its band."""
    tenant_classes: dict[str, str]
    """Consuming tenant -> the class of its requests."""
    consumers: dict[str, tuple[Consumer, ...]]
    """Model behind the gateway -> its consumers, in the order the stack lists them."""
    queue_timeout_seconds: int

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self.consumers)

    @property
    def hostnames(self) -> dict[str, tuple[str, ...]]:
        """Consuming tenant -> its hostnames (each tenant's are the same for every model)."""
        return {c.tenant: c.hostnames for consumers in self.consumers.values() for c in consumers}

    def objectives(self, model: str) -> dict[str, int]:
        """The model's InferenceObjectives: its consumers' classes -> band."""
        return {c.priority_class: c.band for c in self.consumers[model]}


def router_name(model: str) -> str:
    """A model's router objects are all named so (ConfigMap, Deployment, Service, RBAC)."""
    return f"{model}{ROUTER_SUFFIX}"


def slice_router_name(model: str, index: int | None) -> str:
    """The ConfigMap and Deployment of a model's router (`index` None), or of slice `index`'s of a
    model with prefill and decode apart (the Service, the pool and the RBAC stay the model's)."""
    return router_name(model) if index is None else f"{router_name(model)}-s{index}"


def router_slices(model: ModelSpec) -> list[int | None]:
    """A model's routers: one (`None`), or one per slice of a model with prefill and decode apart."""
    return list(range(model.config.replicas)) if model.disaggregated else [None]


def router_deployment_names(model: ModelSpec) -> list[str]:
    return [slice_router_name(model.name, index) for index in router_slices(model)]


def model_consumers(model: ModelSpec) -> tuple[str, ...]:
    consumers = model.config.gateway.consumers
    return (model.tenant,) if consumers is None else consumers


def tenant_class(config: StackConfig, tenant: str, own: set[str]) -> str | None:
    """The class a tenant's requests carry: its own `gateway.priorityClass`, else the class of
    its models (`own`) when they all have one; None leaves it to the baseline."""
    entry = config.tenants.get(tenant)
    if entry is not None and entry.gateway.priority_class is not None:
        return entry.gateway.priority_class
    return next(iter(own)) if len(own) == 1 else None


def ranked_bands(classes: Mapping[str, PriorityClassConfig], baseline: str) -> dict[str, int]:
    values = sorted({c.value for c in classes.values()})
    zero = values.index(classes[baseline].value)
    return {name: values.index(c.value) - zero for name, c in classes.items()}


def resolve_gateway(
    config: StackConfig, models: Mapping[str, ModelSpec], classes: Mapping[str, PriorityClassConfig]
) -> GatewaySpec | None:
    """None unless the stack has a `gateway` section and a model behind it. Names that do not
    resolve (an unknown tenant or class) are left to `config.checks.gateway`, which refuses them;
    here they only drop out."""
    served = [m for m in models.values() if m.config.gateway.enabled]
    if config.gateway is None or not served or not classes:
        return None
    tenants = list(dict.fromkeys(t for m in served for t in model_consumers(m) if t in config.tenants))
    classes_of: dict[str, set[str]] = {}
    for m in models.values():
        classes_of.setdefault(m.tenant, set()).add(m.config.priority_class)
    chosen = {t: tenant_class(config, t, classes_of.get(t, set())) for t in tenants}
    known: dict[str, str] = {t: c for t, c in chosen.items() if c is not None and c in classes}
    explicit = config.gateway.baseline_priority_class
    pool = set(known.values()) or set(classes)
    baseline: str = (
        explicit if explicit is not None and explicit in classes else min(pool, key=lambda n: (classes[n].value, n))
    )
    bands = ranked_bands(classes, baseline)
    tenant_classes = {t: known.get(t, baseline) for t in tenants}
    consumers = {
        m.name: tuple(
            Consumer(t, tenant_classes[t], bands[tenant_classes[t]], _hostnames(config, t))
            for t in dict.fromkeys(model_consumers(m))
            if t in tenant_classes
        )
        for m in served
    }
    return GatewaySpec(config.gateway, baseline, bands, tenant_classes, consumers, _queue_timeout(config, served))


def _hostnames(config: StackConfig, tenant: str) -> tuple[str, ...]:
    own = config.tenants[tenant].gateway.hostnames
    domain = config.gateway.domain if config.gateway is not None else None
    return own or ((f"{tenant}.{domain}",) if domain else ())


def _queue_timeout(config: StackConfig, served: list[ModelSpec]) -> int:
    """The stack's, else the longest wake of a model that sleeps at zero: its first requests wait
    while it wakes. At least `DEFAULT_QUEUE_TIMEOUT_SECONDS`."""
    assert config.gateway is not None
    explicit = config.gateway.router.flow_control.queue_timeout_seconds
    if explicit is not None:
        return explicit
    waking = [wake_seconds(m, config.observability.scrape_interval_seconds) for m in served if scales_from_zero(m)]
    return max([DEFAULT_QUEUE_TIMEOUT_SECONDS, *waking])


def wake_seconds(model: ModelSpec, scrape_interval_seconds: int) -> int:
    """How long a request that wakes a model may wait for it: Prometheus scrapes the router's queue,
    KEDA polls it, the pod is scheduled and started, and the weights load (`loadTimeoutSeconds`)."""
    polling = model.config.autoscaling.polling_interval_seconds if model.config.autoscaling else 0
    return scrape_interval_seconds + polling + WAKE_MARGIN_SECONDS + model.config.startup.load_timeout_seconds


def scales_from_zero(model: ModelSpec) -> bool:
    autoscaling = model.config.autoscaling
    return autoscaling is not None and autoscaling.min_replicas == 0


def wake_up_query(gateway: GatewaySpec | None, model: ModelSpec) -> str | None:
    """What wakes a model behind the gateway from zero: the requests its router holds for it. None
    for a model not behind the gateway, or whose router holds nothing (flow control off)."""
    if gateway is None or model.name not in gateway.consumers or not gateway.config.router.flow_control.enabled:
        return None
    return f'sum({QUEUE_SIZE_METRIC}{{namespace="{model.namespace}",inference_pool="{model.name}"}})'
