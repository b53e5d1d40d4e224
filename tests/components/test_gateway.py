"""The gateway's objects as rendered: each pool selects exactly its model's serving pods on the port
they serve, every reference resolves, and the router's config holds a band per consumer class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from config.upstream.inference_gateway import FAIRNESS_HEADER, OBJECTIVE_HEADER
from config.upstream.lws import LWS_NAME_LABEL, LWS_WORKER_INDEX_LABEL
from offline.render import StackRender
from tests.components.helpers import objects_of_kind
from tests.conftest import mutate, stack_raw

STACK = "aicloud-b"


def _pods(render: StackRender) -> Iterator[tuple[str, str, dict[str, str], dict[str, Any]]]:
    """(namespace, what, labels, pod spec) of every pod the workloads make, with the labels their
    controllers add: a LeaderWorkerSet's name and each pod's worker index (0 for the leader)."""
    for obj in render.rendered.objects:
        spec = obj.manifest.get("spec", {})
        if obj.kind == "Deployment":
            template = spec["template"]
            yield obj.namespace, f"{obj.name} pod", dict(template["metadata"]["labels"]), template["spec"]
        elif obj.kind == "LeaderWorkerSet":
            templates = spec["leaderWorkerTemplate"]
            # An instance of one pod (a role of a slice) has its worker template only.
            roles = (
                ((0, "leaderTemplate"), (1, "workerTemplate"))
                if "leaderTemplate" in templates
                else ((0, "workerTemplate"),)
            )
            for index, role in roles:
                labels = {
                    **templates[role]["metadata"]["labels"],
                    LWS_NAME_LABEL: obj.name,
                    LWS_WORKER_INDEX_LABEL: str(index),
                }
                yield obj.namespace, f"{obj.name} {role}", labels, templates[role]["spec"]


def _selected(render: StackRender, namespace: str, selector: dict[str, str]) -> list[str]:
    return [
        what
        for ns, what, labels, _ in _pods(render)
        if ns == namespace and all(labels.get(k) == v for k, v in selector.items())
    ]


PD = "qwen3-235b-pd"
PD_SERVERS = sorted(f"{PD}-s{s}-{role} workerTemplate" for s in (0, 1) for role in ("prefill", "decode"))
"""The serving pods of the example's model with prefill and decode apart: both roles of both slices."""


def _servers(name: str) -> list[str]:
    return PD_SERVERS if name == PD else [f"{name} pod"]


def test_each_pool_selects_exactly_its_models_serving_pods(committed_render: Any) -> None:
    render = committed_render(STACK)
    pools = objects_of_kind(render, "InferencePool")
    assert sorted(pools) == [PD, "qwen3-32b-batch", "qwen3-8b"]
    for name, pool in pools.items():
        namespace = pool["metadata"]["namespace"]
        assert sorted(_selected(render, namespace, pool["spec"]["selector"]["matchLabels"])) == _servers(name)


def test_a_multi_node_pool_selects_the_leaders_only(render_raw: Any) -> None:
    raw = mutate(stack_raw(STACK), lambda r: r["models"]["llama-70b"].update(gateway={"enabled": True}))
    render = render_raw(raw)
    pool = objects_of_kind(render, "InferencePool")["llama-70b"]
    assert _selected(render, "chat", pool["spec"]["selector"]["matchLabels"]) == ["llama-70b leaderTemplate"]


def test_a_pool_targets_the_port_its_pods_serve(committed_render: Any) -> None:
    render = committed_render(STACK)
    for name, pool in objects_of_kind(render, "InferencePool").items():
        served = {
            port["containerPort"]
            for ns, what, labels, spec in _pods(render)
            if what in _servers(name)
            # Decode's routing sidecar serves the API in front of its vLLM.
            for container in [*spec["containers"], *spec.get("initContainers", [])]
            for port in container.get("ports", [])
            if port["name"] == "http"
        }
        assert [p["number"] for p in pool["spec"]["targetPorts"]] == sorted(served)


def test_no_selector_of_a_model_reaches_a_router(committed_render: Any) -> None:
    render = committed_render(STACK)
    routers = sorted(w for _, w, labels, _ in _pods(render) if labels.get("app.kubernetes.io/component") == "router")
    assert routers == [f"{PD}-epp-s0 pod", f"{PD}-epp-s1 pod", "qwen3-32b-batch-epp pod", "qwen3-8b-epp pod"]
    pools = [p["spec"]["selector"]["matchLabels"] for p in objects_of_kind(render, "InferencePool").values()]
    services = [s["spec"]["selector"] for n, s in objects_of_kind(render, "Service").items() if not n.endswith("-epp")]
    monitors = [m["spec"]["selector"]["matchLabels"] for n, m in objects_of_kind(render, "PodMonitor").items()]
    for selector in pools + services + [m for m in monitors if m.get("app.kubernetes.io/name") != "endpoint-picker"]:
        for namespace in ("chat", "search"):
            assert not set(_selected(render, namespace, selector)) & set(routers), selector


def _routes(render: StackRender) -> list[dict[str, Any]]:
    return [o.manifest for o in render.rendered.objects if o.kind == "HTTPRoute"]


def test_every_route_reference_resolves(committed_render: Any) -> None:
    render = committed_render(STACK)
    (gateway,) = objects_of_kind(render, "Gateway").values()
    listeners = {listener["name"]: listener for listener in gateway["spec"]["listeners"]}
    tenant_of = {ns: tenant.name for tenant in render.spec.tenants.values() for ns in tenant.namespaces}
    routes = _routes(render)
    assert sorted(r["metadata"]["name"] for r in routes) == [
        f"{PD}-search",
        "qwen3-32b-batch-search",
        "qwen3-8b-chat",
        "qwen3-8b-search",
    ]
    for route in routes:
        namespace = route["metadata"]["namespace"]
        for parent in route["spec"]["parentRefs"]:
            listener = listeners[parent["sectionName"]]
            (allowed,) = listener["allowedRoutes"]["namespaces"]["selector"]["matchExpressions"]
            # The API server's own label of each namespace, which nobody can set to another's name.
            assert allowed["key"] == "kubernetes.io/metadata.name" and namespace in allowed["values"]
            assert {tenant_of[ns] for ns in allowed["values"]} <= set(render.spec.tenants)
            assert listener["hostname"] in route["spec"]["hostnames"]
        (rule,) = route["spec"]["rules"]
        (backend,) = rule["backendRefs"]
        assert (backend["kind"], backend["name"]) == (
            "InferencePool",
            route["metadata"]["labels"]["volcano-platform.io/model"],
        )
        assert "filters" not in rule, "tenantHeaders: client: the proxy in front sets the headers"


def test_with_route_headers_each_route_sets_its_tenants_objective_and_fairness_id(render_raw: Any) -> None:
    render = render_raw(mutate(stack_raw(STACK), lambda r: r["gateway"].update(tenantHeaders="route")))
    objectives = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objects_of_kind(render, "InferenceObjective").values()
    }
    for route in _routes(render):
        (rule,) = route["spec"]["rules"]
        headers = {h["name"]: h["value"] for h in rule["filters"][0]["requestHeaderModifier"]["set"]}
        objective = objectives[(route["metadata"]["namespace"], headers[OBJECTIVE_HEADER])]
        assert objective["spec"]["poolRef"]["name"] == rule["backendRefs"][0]["name"]
        consumer = route["metadata"]["name"].removeprefix(rule["backendRefs"][0]["name"] + "-")
        assert headers[FAIRNESS_HEADER] == consumer
        assert objective["spec"]["priority"] == render.spec.gateway.bands[render.spec.gateway.tenant_classes[consumer]]


def test_the_router_config_has_a_band_per_objective(committed_render: Any) -> None:
    render = committed_render(STACK)
    config = yaml.safe_load(objects_of_kind(render, "ConfigMap")["qwen3-8b-epp"]["data"]["config.yaml"])
    assert config["featureGates"] == ["flowControl"]
    objectives = [
        o for o in objects_of_kind(render, "InferenceObjective").values() if o["metadata"]["namespace"] == "chat"
    ]
    bands = sorted({o["spec"]["priority"] for o in objectives}, reverse=True)
    assert [b["priority"] for b in config["flowControl"]["priorityBands"]] == bands == [3, 0]
    plugins = {p.get("name", p["type"]) for p in config["plugins"]}
    refs = [b["fairnessPolicyRef"] for b in config["flowControl"]["priorityBands"]]
    refs += [p["pluginRef"] for profile in config["schedulingProfiles"] for p in profile["plugins"]]
    assert set(refs) <= plugins
    assert config["flowControl"]["defaultRequestTTL"] == "1980s"


def test_the_router_reads_only_what_it_picks_from(committed_render: Any) -> None:
    render = committed_render(STACK)
    role = objects_of_kind(render, "Role")["qwen3-8b-epp"]
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert not objects_of_kind(render, "ClusterRole"), "the router needs no cluster-wide rights"


def test_a_model_asleep_behind_the_gateway_wakes_on_its_routers_queue(committed_render: Any) -> None:
    render = committed_render(STACK)
    scaled = objects_of_kind(render, "ScaledObject")["qwen3-32b-batch"]
    wake = next(t for t in scaled["spec"]["triggers"] if t["name"] == "wake-up")
    assert "inference_extension_flow_control_queue_size" in wake["metadata"]["query"]
    assert 'inference_pool="qwen3-32b-batch"' in wake["metadata"]["query"]
    assert wake["metadata"]["activationThreshold"] == "0"
    monitor = objects_of_kind(render, "PodMonitor")["qwen3-32b-batch-epp"]
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_a_schedule_keeps_the_model_awake_in_its_window(committed_render: Any) -> None:
    scaled = objects_of_kind(committed_render(STACK), "ScaledObject")["qwen3-32b-batch"]
    (cron,) = [t for t in scaled["spec"]["triggers"] if t["type"] == "cron"]
    assert cron == {
        "type": "cron",
        "name": "schedule-0",
        "metadata": {
            "timezone": "Asia/Shanghai",
            "start": "0 8 * * 1-5",
            "end": "0 20 * * 1-5",
            "desiredReplicas": "1",
        },
    }


def test_behind_a_mirror_the_router_pulls_with_its_login_created_first(render_raw: Any) -> None:
    """The mirror's login is made in the router's namespace, and the router waits for it."""

    def behind_gateway(raw: dict[str, Any]) -> None:
        raw["gateway"] = {"className": "istio", "domain": "llm.example.com"}
        raw["models"]["qwen8b-preemptor"]["gateway"] = {"enabled": True}
        raw["models"]["qwen8b-preemptor"].pop("imagePullSecrets", None)  # only the router needs the login

    render = render_raw(mutate(stack_raw("aicloud-a"), behind_gateway))
    deployment = render.rendered.find("Deployment", "qwen8b-preemptor-epp", "a01").manifest
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "mars-registry"}]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith("10.8.17.100:60066/llm-d/")
    secret = next(
        r.urn
        for r in render.run.registrations
        if r.type == "kubernetes:core/v1:Secret"
        and r.inputs["metadata"] == {**r.inputs["metadata"], "name": "mars-registry", "namespace": "a01"}
    )
    router = next(r for r in render.run.registrations if r.name == "gateway-qwen8b-preemptor-router")
    assert secret in router.dependencies
