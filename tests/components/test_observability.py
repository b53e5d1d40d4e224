"""Monitors, alert rules, the dashboard and autoscalers: rendered for every model, valid against the
vendored CRDs, queries that name only series that exist, rules that fire when they should (promtool),
and autoscaled models that Pulumi leaves to their autoscaler."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from components.observability.dashboard import CONFIGMAP_NAME, DASHBOARD_FILE, dashboard
from config.sections.observability import ObservabilityConfig
from config.upstream.vllm_metrics import kv_cache_usage_metric
from live.cluster_state import state_from_objects
from live.preflight import preflight
from offline.manifests import RenderedObject
from offline.metric_check import check_queries
from offline.render import StackRender
from tests.components.helpers import STACK, alerts_of, objects_of_kind
from tests.conftest import load, stack_raw

# -- what is rendered -------------------------------------------------------------------------------


def test_every_model_is_scraped_and_lws_leaders_only(committed_render: Any) -> None:
    render = committed_render(STACK)
    monitors = objects_of_kind(render, "PodMonitor")
    routers = {f"{m}-epp" for m in render.spec.gateway.models}
    assert set(monitors) == set(render.spec.models) | routers
    for name in routers:  # the gateway's routers: their series are the pool's, not a model's
        (endpoint,) = monitors.pop(name)["spec"]["podMetricsEndpoints"]
        assert endpoint["port"] == "metrics" and "model" not in {r["targetLabel"] for r in endpoint["relabelings"]}
    for name, monitor in monitors.items():
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        assert (endpoint["port"], endpoint["path"]) == ("http", "/metrics")
        relabelled = {r["targetLabel"]: r["replacement"] for r in endpoint["relabelings"] if "replacement" in r}
        assert relabelled == {"model": name, "tenant": render.spec.models[name].tenant}
        from_pods = {r["targetLabel"]: r["sourceLabels"] for r in endpoint["relabelings"] if "sourceLabels" in r}
        if render.spec.models[name].disaggregated:  # each series says its slice and role
            assert from_pods == {
                "slice": ["__meta_kubernetes_pod_label_volcano_platform_io_slice"],
                "serving_role": ["__meta_kubernetes_pod_label_volcano_platform_io_serving_role"],
            }
        else:
            assert from_pods == {}
    leaders = monitors["llama-70b"]["spec"]["selector"]["matchLabels"]
    assert leaders == {"leaderworkerset.sigs.k8s.io/name": "llama-70b", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    # A model with prefill and decode apart: the first pod of every instance of both roles.
    assert monitors["qwen3-235b-pd"]["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": "qwen3-235b-pd",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    # The pods the monitor selects declare the port it names.
    lws = objects_of_kind(render, "LeaderWorkerSet")["llama-70b"]["spec"]["leaderWorkerTemplate"]
    (leader,) = lws["leaderTemplate"]["spec"]["containers"]
    assert {"name": "http", "containerPort": 8000, "protocol": "TCP"} in leader["ports"]


def test_volcano_is_scraped_on_its_metrics_services(committed_render: Any) -> None:
    render = committed_render(STACK)
    monitors = objects_of_kind(render, "ServiceMonitor")
    assert {n: m["spec"]["selector"]["matchLabels"] for n, m in monitors.items()} == {
        "volcano-scheduler": {"app": "volcano-scheduler"},
        "volcano-controller": {"app": "volcano-controller"},
    }
    assert all(m["spec"]["endpoints"][0]["port"] == "metrics" for m in monitors.values())
    (release,) = [r for r in render.rendered.releases if r.data["release"] == "volcano"]
    custom = release.data["values"]["custom"]
    assert custom["scheduler_metrics_enable"] is True and custom["controller_metrics_enable"] is True


def test_nothing_is_rendered_with_observability_off(committed_render: Any) -> None:
    kinds = {o.kind for o in committed_render("dev").rendered.objects}
    assert not kinds & {"PodMonitor", "ServiceMonitor", "PrometheusRule", "ScaledObject", "HorizontalPodAutoscaler"}
    assert "ConfigMap" not in kinds


def test_alerts_cover_what_a_platform_team_pages_on(committed_render: Any) -> None:
    alerts = alerts_of(committed_render(STACK))
    assert set(alerts) == {
        "VllmModelNoReadyReplica",
        "VllmModelReplicasMissing",
        "VllmMetricsDown",
        "VllmRequestsQueueing",
        "VllmKvCacheNearlyFull",
        "VolcanoGangUnschedulable",
        "VolcanoPodGroupsWaiting",
        "VolcanoQueueAtCapability",
        "VolcanoSchedulerDown",
        "VolcanoControllerDown",
        "InferenceRequestsHeld",
        "InferenceRequestsDropped",
        "InferenceQueueTimeHigh",
    }
    for name, alert in alerts.items():
        assert alert["labels"]["team"] == "gpu-platform" and alert["labels"]["severity"] in ("critical", "warning")
        assert alert["annotations"]["runbook"], name
        assert alert["annotations"]["runbook_url"] == f"https://runbooks.example.com/volcano-platform#{name.lower()}"
        assert "{{" not in alert["annotations"]["runbook"] + alert["annotations"]["description"]


def test_thresholds_come_from_the_stack(render_raw: Any) -> None:
    raw = stack_raw(STACK)
    raw["observability"]["alerts"].update(requestsWaiting=42, requestsWaitingMinutes=7, kvCacheUsage=0.9)
    alerts = alerts_of(render_raw(raw))
    assert alerts["VllmRequestsQueueing"]["expr"].endswith("> 42") and alerts["VllmRequestsQueueing"]["for"] == "7m"
    assert alerts["VllmKvCacheNearlyFull"]["expr"].endswith("> 0.9")


def test_each_model_is_read_under_its_releases_kv_cache_name(committed_render: Any) -> None:
    render = committed_render(STACK)
    expr = alerts_of(render)["VllmKvCacheNearlyFull"]["expr"]
    assert 'vllm:gpu_cache_usage_perc{model="bge-reranker"}' in expr
    assert 'vllm:kv_cache_usage_perc{model=~"llama-70b|qwen3-235b-pd|qwen3-30b|qwen3-32b-batch|qwen3-8b"}' in expr
    assert kv_cache_usage_metric((0, 9, 2)) == "vllm:gpu_cache_usage_perc"
    assert kv_cache_usage_metric((0, 10, 0)) == kv_cache_usage_metric((0, 33, 0)) == "vllm:kv_cache_usage_perc"


def test_the_proportion_plugin_alerts_on_its_deserved_share_not_on_capability(render_raw: Any) -> None:
    """With proportion, `volcano_queue_overused` means "at the deserved share" (proportion allocates
    nothing beyond it), so the alert says that, under its own name."""
    raw = stack_raw(STACK)
    raw["volcano"] = {"scheduler": {"queuePlugin": "proportion"}}
    render = render_raw(raw)
    alerts = alerts_of(render)
    assert "VolcanoQueueAtCapability" not in alerts
    rule = alerts["VolcanoQueueAtDeservedShare"]
    assert rule["expr"] == 'volcano_queue_overused{queue_name=~"chat|search"} == 1'
    assert "deserved share" in rule["annotations"]["summary"] and "capability" not in rule["annotations"]["summary"]
    assert check_queries(render.spec, render.rendered)[0] == []


def test_gpu_counts_on_the_dashboard_are_whole_gpus_and_alerts_compare_like_with_like(committed_render: Any) -> None:
    """Volcano exports GPUs as milli-values (128 GPUs read 128000): the dashboard divides, the alert
    compares two milli-values and does not."""
    render = committed_render(STACK)
    queue_panel = next(
        p for p in _dashboard(render)["panels"] if p["title"].endswith("allocated, deserved and capability")
    )
    assert all(t["expr"].endswith(" / 1000") for t in queue_panel["targets"])
    expr = alerts_of(render)["VolcanoQueueAtCapability"]["expr"]
    assert "/ 1000" not in expr and expr.count("_scalar_resources") == 2


def test_rules_watch_only_the_stacks_own_pod_groups(committed_render: Any, render_raw: Any) -> None:
    expr = alerts_of(committed_render(STACK))["VolcanoGangUnschedulable"]["expr"]
    assert expr == (
        'max by (job_id) (volcano_unschedule_task_count{job_id=~"llama-70b|qwen3-235b-pd-s0|qwen3-235b-pd-s1"}) > 0'
    )
    raw = stack_raw(STACK)
    del raw["models"]["llama-70b"]
    del raw["models"]["qwen3-235b-pd"]
    assert "VolcanoGangUnschedulable" not in alerts_of(render_raw(raw)), "no PodGroup of its own to watch"


# -- the dashboard ----------------------------------------------------------------------------------


def _dashboard(render: StackRender) -> dict[str, Any]:
    configmap = objects_of_kind(render, "ConfigMap")[CONFIGMAP_NAME]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "GPU platform"}
    return dict(json.loads(configmap["data"][DASHBOARD_FILE]))


def test_the_dashboard_has_a_row_per_model_and_queue(committed_render: Any) -> None:
    render = committed_render(STACK)
    board = _dashboard(render)
    variables = {v["name"]: v["query"].split(",") for v in board["templating"]["list"]}
    assert variables == {"queue": ["chat", "search"], "model": sorted(render.spec.models)}
    rows = {p["title"]: p.get("repeat") for p in board["panels"] if p["type"] == "row"}
    assert rows == {"Scheduler": None, "Queue $queue": "queue", "Model $model": "model", "Inference gateway": None}
    titles = [p["title"] for p in board["panels"] if p["type"] == "timeseries"]
    for wanted in ("Throughput", "Time to first token", "Time waiting for the batch", "Requests", "KV-cache usage"):
        assert wanted in titles
    queue_panel = next(p for p in board["panels"] if p["title"].endswith("allocated, deserved and capability"))
    assert [t["legendFormat"] for t in queue_panel["targets"]] == ["allocated", "deserved", "capability"]
    assert all(
        p["datasource"] == {"type": "prometheus", "uid": "prometheus"} for p in board["panels"] if "targets" in p
    )


def test_the_dashboard_layout_is_a_valid_grid(committed_render: Any) -> None:
    panels = _dashboard(committed_render(STACK))["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        mine = {
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, f"panel {panel['title']} overlaps another"
        cells |= mine


def test_the_dashboard_stays_small_at_hundreds_of_models() -> None:
    raw = stack_raw(STACK)
    template = raw["models"]["qwen3-8b"]
    raw["models"] = {
        f"model-{i:03d}": {**template, "autoscaling": None, "servedModelName": f"model-{i:03d}"} for i in range(400)
    }
    raw["tenants"]["chat"]["queue"]["capability"] = {"nvidia.com/gpu": 4000}
    raw["topology"]["domains"]["spine-b1"]["domains"]["leaf-b1"]["nodes"] = ["gpu-b-[001-600]"]
    spec = load(raw)
    text = json.dumps(dashboard(spec))
    assert len(text) < 64 * 1024  # the ConfigMap limit is 1 MiB; the text grows by a name per model
    assert len(json.loads(text)["templating"]["list"][1]["query"].split(",")) == 400


def test_the_prometheus_url_follows_the_kube_prometheus_stack_release() -> None:
    assert ObservabilityConfig().query_url == "http://kube-prometheus-stack-prometheus.monitoring:9090"
    assert (
        ObservabilityConfig(release="kps", namespace="obs").query_url
        == "http://kps-kube-prometheus-stack-prometheus.obs:9090"
    )
    long = ObservabilityConfig(release="platform-monitoring-stack").query_url
    assert long == "http://platform-monitoring-stack-prometheus.monitoring:9090"  # cut to 26, trailing - dropped
    assert ObservabilityConfig(prometheusUrl="https://prom.example:443").query_url == "https://prom.example:443"


# -- preflight ---------------------------------------------------------------------------------------


def _crd(plural: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "versions": [{"name": "v1", "served": True}]},
    }


def test_preflight_needs_the_operators_the_stack_does_not_install(committed_render: Any) -> None:
    render = committed_render(STACK)
    bare = preflight(render.spec, render.rendered, state_from_objects([], "empty"))
    subjects = {f.subject for f in bare.findings if f.check == "prerequisite-missing"}
    gateway = {"gateway.networking.k8s.io", "inference.networking.k8s.io", "inference.networking.x-k8s.io"}
    assert subjects == {"monitoring.coreos.com", "keda.sh", "observability.dashboard.namespace"} | gateway
    ready = state_from_objects(
        [
            _crd("podmonitors", "monitoring.coreos.com"),
            _crd("servicemonitors", "monitoring.coreos.com"),
            _crd("prometheusrules", "monitoring.coreos.com"),
            _crd("scaledobjects", "keda.sh"),
            _crd("gateways", "gateway.networking.k8s.io"),
            _crd("httproutes", "gateway.networking.k8s.io"),
            _crd("inferencepools", "inference.networking.k8s.io"),
            _crd("inferenceobjectives", "inference.networking.x-k8s.io"),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}},
        ],
        "ready",
    )
    report = preflight(render.spec, render.rendered, ready)
    assert not [f for f in report.findings if f.check == "prerequisite-missing"]


def test_rendered_objects_validate_against_the_vendored_crds(committed_render: Any) -> None:
    from offline.schemas import schema_dirs, validate_objects

    render = committed_render(STACK)
    objects: list[RenderedObject] = [
        o
        for o in render.rendered.objects
        if o.kind in ("PodMonitor", "ServiceMonitor", "PrometheusRule", "ScaledObject")
    ]
    report = validate_objects(objects, "1.33", schema_dirs(render.spec))
    # PodMonitors of the models and the routers, ServiceMonitors, the rules, ScaledObjects (two prefill roles)
    assert report.issues == [] and report.checked == len(objects) == 6 + 3 + 2 + 1 + 5
    spec = {**objects[0].manifest["spec"], "podMetricsEndpoint": []}  # a typo the API server would drop
    broken = dataclasses.replace(objects[0], manifest={**objects[0].manifest, "spec": spec})
    assert validate_objects([broken], "1.33", schema_dirs(render.spec)).issues
