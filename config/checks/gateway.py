"""Checks of the inference gateway: every name it routes by resolves, no two models answer one name
on one hostname, and a model that scales from zero has something that holds and wakes it."""

from __future__ import annotations

from collections.abc import Iterator

from config.checks.names import RESERVED_NAMESPACE_PREFIXES, RESERVED_NAMESPACES
from config.errors import Problem, join_path
from config.spec.gateway import model_consumers, router_deployment_names, router_name, scales_from_zero, wake_seconds
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.upstream.inference_gateway import GATEWAY_LISTENERS_MAX


def check_gateway(spec: PlatformSpec) -> list[Problem]:
    problems = list(_wake_up(spec))
    served = [m for m in spec.models.values() if m.config.gateway.enabled]
    problems += _dead_consumers(spec)
    if spec.config.gateway is None:
        problems += [
            Problem(
                join_path("models", m.name, "gateway", "enabled"),
                "the model is to be served through the gateway, but the stack's `gateway` section is missing or empty",
                "add `gateway` (its `className` and `domain`), or remove `gateway.enabled`",
                got=True,
            )
            for m in served
        ]
        return problems
    problems += _section(spec, bool(served))
    # (namespace, object name) -> the model whose workload or Service takes it, read once.
    taken = {(m.namespace, name): m.name for m in spec.models.values() for name in (m.name, m.service_name)}
    for model in served:
        problems += _consumers(spec, model, taken)
    problems += _names_per_hostname(spec)
    problems += _hostname_owners(spec)
    problems += _bands(spec)
    problems += _scale_from_zero(spec)
    problems += _sheddable(spec)
    return problems


def _wake_up(spec: PlatformSpec) -> Iterator[Problem]:
    """A model at zero replicas has no vLLM series to wake it: its router's queue does (behind the
    gateway with flow control), or a query of the stack's."""
    for model in spec.models.values():
        scaling = model.config.autoscaling
        if scaling is None or scaling.engine != "keda" or not scales_from_zero(model) or scaling.activation:
            continue
        if model.config.gateway.enabled:
            continue  # the router's queue wakes it; `_scale_from_zero` checks it holds requests
        yield Problem(
            join_path("models", model.name, "autoscaling"),
            "with minReplicas 0 no vLLM pod runs, so no vLLM metric can wake the model",
            "serve it through the gateway (`gateway.enabled`: its router holds the first requests and wakes "
            "it), set `activation.query` to a series that exists without the model, or `minReplicas: 1`",
            got=0,
        )


def _dead_consumers(spec: PlatformSpec) -> Iterator[Problem]:
    for model in spec.models.values():
        if model.config.gateway.consumers is not None and not model.config.gateway.enabled:
            yield Problem(
                join_path("models", model.name, "gateway", "consumers"),
                "consumers are set but the model is not behind the gateway, so nobody reaches it this way",
                "add `enabled: true`, or remove `consumers`",
                got=list(model.config.gateway.consumers),
                severity="warning",
            )


def _section(spec: PlatformSpec, served: bool) -> Iterator[Problem]:
    gateway = spec.config.gateway
    assert gateway is not None
    if not served:
        yield Problem(
            "gateway",
            "no model is served through the gateway, so the section creates nothing",
            "set `gateway.enabled: true` on the models to serve, or remove the section",
            severity="warning",
        )
        return
    if gateway.class_name is None and not gateway.gateway.existing:
        yield Problem(
            "gateway.className",
            "the stack creates the Gateway, which needs a GatewayClass",
            "name the GatewayClass of the cluster's gateway implementation (`kubectl get gatewayclass`), "
            "or set `gateway.gateway.existing: true` to attach routes to a Gateway made elsewhere",
        )
    shared = gateway.gateway
    tenants = {ns: t.name for t in spec.tenants.values() for ns in t.namespaces}
    if not shared.existing and (
        shared.namespace in tenants
        or shared.namespace in RESERVED_NAMESPACES
        or shared.namespace.startswith(RESERVED_NAMESPACE_PREFIXES)
    ):
        whose = f"tenant `{tenants[shared.namespace]}`'s" if shared.namespace in tenants else "a system namespace"
        yield Problem(
            "gateway.gateway.namespace",
            f"the stack would create the Gateway's namespace, and `{shared.namespace}` is {whose}",
            "give the Gateway a namespace of its own (the default `inference-gateway`)",
            got=shared.namespace,
        )
    listeners = sum(len(hosts) for hosts in spec.gateway.hostnames.values()) if spec.gateway else 0
    if not shared.existing and listeners > GATEWAY_LISTENERS_MAX:
        yield Problem(
            "gateway.gateway",
            f"the Gateway would need {listeners} listeners (one per consuming tenant's hostname), more than the "
            f"{GATEWAY_LISTENERS_MAX} Gateway API allows",
            "give tenants fewer hostnames, or serve them through an existing Gateway with wildcard listeners",
            got=listeners,
        )
    if gateway.baseline_priority_class is not None and gateway.baseline_priority_class not in spec.priority_classes:
        yield _unknown_class(spec, "gateway.baselinePriorityClass", gateway.baseline_priority_class)
    image = gateway.router.image
    if image is not None and "@" not in image and (":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")):
        yield Problem(
            "gateway.router.image",
            "the router image is not pinned (no tag, or `latest`), so routers may run different releases, and "
            "the config the stack writes is v0.7.1's",
            "pin the v0.7.1 tag (or its digest) under your registry, or leave `image` out",
            got=image,
        )
    if gateway.router.failure_mode == "FailOpen" and gateway.router.flow_control.enabled:
        yield Problem(
            "gateway.router.failureMode",
            "while the router does not answer, the gateway sends requests to any replica, past the queue and the "
            "tenants' priorities",
            "keep `FailClose` unless availability matters more than the order of the tenants' requests",
            got="FailOpen",
            severity="warning",
        )


def _unknown_class(spec: PlatformSpec, path: str, name: str) -> Problem:
    return Problem(
        path,
        f"`{name}` is not one of the stack's PriorityClasses",
        f"use one of {', '.join(sorted(spec.priority_classes))}",
        got=name,
    )


def _consumers(spec: PlatformSpec, model: ModelSpec, taken: dict[tuple[str, str], str]) -> Iterator[Problem]:
    if model.config.gateway.consumers == ():
        yield Problem(
            join_path("models", model.name, "gateway", "consumers"),
            "the model is behind the gateway with no consumer, so no route reaches its router",
            "list the tenants that call it (or leave `consumers` out: its own tenant)",
            got=[],
            severity="warning",
        )
    for router in dict.fromkeys([router_name(model.name), *router_deployment_names(model)]):
        clash = taken.get((model.namespace, router))
        if clash is not None:
            yield Problem(
                join_path("models", model.name, "gateway", "enabled"),
                f"the model's router is named `{router}`, which model `{clash}` already takes in namespace "
                f"`{model.namespace}`",
                f"rename one of the models (or `{clash}`'s `serviceName`)",
                got=True,
            )
    seen: set[str] = set()
    for index, tenant in enumerate(model_consumers(model)):
        path = join_path("models", model.name, "gateway", "consumers") + f"[{index}]"
        if tenant in seen:
            yield Problem(path, f"`{tenant}` is listed twice", "list each tenant once", got=tenant)
        elif tenant not in spec.config.tenants:
            yield Problem(
                path,
                f"`{tenant}` is not a tenant of the stack",
                f"use one of {', '.join(sorted(spec.config.tenants))}",
                got=tenant,
            )
        seen.add(tenant)


def _consuming_tenants(spec: PlatformSpec) -> dict[str, list[str]]:
    """Tenant -> the models it consumes."""
    gateway = spec.gateway
    out: dict[str, list[str]] = {}
    for model, consumers in (gateway.consumers if gateway else {}).items():
        for consumer in consumers:
            out.setdefault(consumer.tenant, []).append(model)
    return out


def _names_per_hostname(spec: PlatformSpec) -> Iterator[Problem]:
    """Routes match a model by its served name: two models one tenant reaches under one name would
    split its requests between them."""
    for tenant, models in sorted(_consuming_tenants(spec).items()):
        by_name: dict[str, str] = {}
        for name in sorted(models):
            model = spec.models[name]
            served = model.config.served_model_name or name
            if served in by_name:
                yield Problem(
                    join_path("models", name, "servedModelName"),
                    f"tenant `{tenant}` reaches both `{by_name[served]}` and `{name}` through the gateway under the "
                    f"name `{served}`, and its requests would be split between them",
                    "give the models distinct `servedModelName`s, or remove one from the other's consumers",
                    got=served,
                )
            by_name.setdefault(served, name)


def _hostname_owners(spec: PlatformSpec) -> Iterator[Problem]:
    consuming = _consuming_tenants(spec)
    hostnames = spec.gateway.hostnames if spec.gateway else {}
    owner: dict[str, str] = {}
    for tenant in sorted(consuming):
        entry = spec.config.tenants[tenant]
        names = hostnames.get(tenant, ())
        if not names:
            yield Problem(
                join_path("tenants", tenant, "gateway", "hostnames"),
                f"tenant `{tenant}` consumes {', '.join(f'`{m}`' for m in consuming[tenant])} through the gateway "
                "but has no hostname",
                "set `gateway.domain` (hostnames are then `<tenant>.<domain>`) or the tenant's `gateway.hostnames`",
            )
        for hostname in names:
            if owner.get(hostname) == tenant:
                yield Problem(
                    join_path("tenants", tenant, "gateway", "hostnames"),
                    f"`{hostname}` is listed twice",
                    "list each hostname once",
                    got=hostname,
                )
            elif hostname in owner:
                yield Problem(
                    join_path("tenants", tenant, "gateway", "hostnames"),
                    f"`{hostname}` is also tenant `{owner[hostname]}`'s, and the gateway could not tell whose "
                    "request it is",
                    "give each tenant its own hostnames",
                    got=hostname,
                )
            owner.setdefault(hostname, tenant)
        if entry.gateway.priority_class is not None and entry.gateway.priority_class not in spec.priority_classes:
            yield _unknown_class(
                spec, join_path("tenants", tenant, "gateway", "priorityClass"), entry.gateway.priority_class
            )


def _bands(spec: PlatformSpec) -> Iterator[Problem]:
    """A tenant whose requests outrank the model's own gang: under load the gang can be preempted
    by work the tenant's requests would outrank at the gateway."""
    gateway = spec.gateway
    if gateway is None:
        return
    for name, consumers in gateway.consumers.items():
        model = spec.models[name]
        own = gateway.bands.get(model.config.priority_class)
        for consumer in consumers:
            if own is not None and consumer.band > own:
                yield Problem(
                    join_path("models", name, "gateway", "consumers"),
                    f"tenant `{consumer.tenant}`'s requests are band {consumer.band} (`{consumer.priority_class}`), "
                    f"above the model's own gang (`{model.config.priority_class}`, band {own}): Volcano may "
                    "preempt the replicas its requests are served first on",
                    f"give the model a class at least `{consumer.priority_class}`, or the tenant a lower "
                    "`gateway.priorityClass`",
                    got=consumer.tenant,
                    severity="warning",
                )


def _sheddable(spec: PlatformSpec) -> Iterator[Problem]:
    """Without flow control the router drops requests of a negative priority while the pool is
    saturated (v1.4.0 `pkg/epp/requestcontrol/admission.go`, `rejectIfSheddableAndSaturated`);
    with it they wait in their band like any other."""
    gateway = spec.gateway
    if gateway is None or gateway.config.router.flow_control.enabled:
        return
    shed = sorted({c.tenant for consumers in gateway.consumers.values() for c in consumers if c.band < 0})
    if shed:
        yield Problem(
            "gateway.baselinePriorityClass",
            f"the requests of {', '.join(f'`{t}`' for t in shed)} are below the baseline (a negative band), "
            "and without flow control the router drops them whenever the model's replicas are saturated",
            "turn flow control on, or lower the baseline to those tenants' class",
            got=gateway.config.baseline_priority_class,
            severity="warning",
        )


def _scale_from_zero(spec: PlatformSpec) -> Iterator[Problem]:
    gateway = spec.gateway
    if gateway is None:
        return
    flow = gateway.config.router.flow_control
    scrape = spec.config.observability.scrape_interval_seconds
    for name in gateway.models:
        model = spec.models[name]
        if not scales_from_zero(model):
            continue
        if not flow.enabled:
            yield Problem(
                "gateway.router.flowControl.enabled",
                f"`{name}` scales to zero behind the gateway, and without flow control its router has nowhere to "
                "hold the first requests: they fail while no replica runs, and nothing wakes the model",
                "turn flow control on, or give the model `minReplicas: 1`",
                got=False,
            )
        elif gateway.queue_timeout_seconds < (wake := wake_seconds(model, scrape)):
            yield Problem(
                "gateway.router.flowControl.queueTimeoutSeconds",
                f"`{name}` may take {wake} s to wake (its load budget, a scrape, a KEDA poll and the scale-up), "
                f"and the requests that woke it are dropped after {gateway.queue_timeout_seconds} s",
                "raise `queueTimeoutSeconds` (or leave it unset: the longest wake is its default)",
                got=gateway.queue_timeout_seconds,
                severity="warning",
            )
