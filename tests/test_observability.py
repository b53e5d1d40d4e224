"""Monitors, alert rules, the dashboard and autoscalers: rendered for every model, valid against the
vendored CRDs, queries that name only series that exist, rules that fire when they should (promtool),
and autoscaled models that Pulumi leaves to their autoscaler."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.dashboard import CONFIGMAP_NAME, DASHBOARD_FILE, dashboard
from config.metrics_catalog import kv_cache_usage_metric, vllm_series, volcano_series
from config.observability import ObservabilityConfig
from live.cluster_state import state_from_objects
from live.preflight import preflight
from offline.diff import diff_dirs
from offline.manifests import RenderedObject
from offline.metric_check import Query, check_queries, query_problems
from offline.render import StackRender, write_render
from tests.conftest import load, mutate, stack_raw

STACK = "aicloud-b"


def _objects(render: StackRender, kind: str) -> dict[str, dict[str, Any]]:
    return {o.name: o.manifest for o in render.rendered.objects if o.kind == kind}


def _rule(render: StackRender) -> dict[str, Any]:
    (rule,) = _objects(render, "PrometheusRule").values()
    return rule


def _alerts(render: StackRender) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for group in _rule(render)["spec"]["groups"] for r in group["rules"]}


# -- what is rendered -------------------------------------------------------------------------------


def test_every_model_is_scraped_and_lws_leaders_only(committed_render: Any) -> None:
    render = committed_render(STACK)
    monitors = _objects(render, "PodMonitor")
    assert set(monitors) == set(render.spec.models)
    for name, monitor in monitors.items():
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        assert (endpoint["port"], endpoint["path"]) == ("http", "/metrics")
        relabelled = {r["targetLabel"]: r["replacement"] for r in endpoint["relabelings"]}
        assert relabelled == {"model": name, "tenant": render.spec.models[name].tenant}
    leaders = monitors["llama-70b"]["spec"]["selector"]["matchLabels"]
    assert leaders == {"leaderworkerset.sigs.k8s.io/name": "llama-70b", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    # The pods the monitor selects declare the port it names.
    lws = _objects(render, "LeaderWorkerSet")["llama-70b"]["spec"]["leaderWorkerTemplate"]
    (leader,) = lws["leaderTemplate"]["spec"]["containers"]
    assert {"name": "http", "containerPort": 8000, "protocol": "TCP"} in leader["ports"]


def test_volcano_is_scraped_on_its_metrics_services(committed_render: Any) -> None:
    render = committed_render(STACK)
    monitors = _objects(render, "ServiceMonitor")
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
    alerts = _alerts(committed_render(STACK))
    assert set(alerts) == {
        "VllmModelNoReadyReplica",
        "VllmMetricsDown",
        "VllmRequestsQueueing",
        "VllmKvCacheNearlyFull",
        "VolcanoGangUnschedulable",
        "VolcanoPodGroupsWaiting",
        "VolcanoQueueAtCapability",
        "VolcanoSchedulerDown",
        "VolcanoControllerDown",
    }
    for name, alert in alerts.items():
        assert alert["labels"]["team"] == "gpu-platform" and alert["labels"]["severity"] in ("critical", "warning")
        assert alert["annotations"]["runbook"], name
        assert alert["annotations"]["runbook_url"] == f"https://runbooks.example.com/volcano-platform#{name.lower()}"
        assert "{{" not in alert["annotations"]["runbook"] + alert["annotations"]["description"]


def test_thresholds_come_from_the_stack(render_raw: Any) -> None:
    raw = stack_raw(STACK)
    raw["observability"]["alerts"].update(requestsWaiting=42, requestsWaitingMinutes=7, kvCacheUsage=0.9)
    alerts = _alerts(render_raw(raw))
    assert alerts["VllmRequestsQueueing"]["expr"].endswith("> 42") and alerts["VllmRequestsQueueing"]["for"] == "7m"
    assert alerts["VllmKvCacheNearlyFull"]["expr"].endswith("> 0.9")


def test_each_model_is_read_under_its_releases_kv_cache_name(committed_render: Any) -> None:
    render = committed_render(STACK)
    expr = _alerts(render)["VllmKvCacheNearlyFull"]["expr"]
    assert 'vllm:gpu_cache_usage_perc{model="bge-reranker"}' in expr
    assert 'vllm:kv_cache_usage_perc{model=~"llama-70b|qwen3-30b|qwen3-32b-batch|qwen3-8b"}' in expr
    assert kv_cache_usage_metric((0, 9, 2)) == "vllm:gpu_cache_usage_perc"
    assert kv_cache_usage_metric((0, 10, 0)) == kv_cache_usage_metric((0, 33, 0)) == "vllm:kv_cache_usage_perc"


def test_the_proportion_plugin_alerts_on_overuse_instead_of_capability(render_raw: Any) -> None:
    raw = stack_raw(STACK)
    raw["volcano"] = {"scheduler": {"queuePlugin": "proportion"}}
    render = render_raw(raw)
    assert (
        _alerts(render)["VolcanoQueueAtCapability"]["expr"] == 'volcano_queue_overused{queue_name=~"chat|search"} == 1'
    )
    assert check_queries(render.spec, render.rendered)[0] == []


# -- every query names series that exist ------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "aicloud-a", STACK])
def test_every_rendered_query_names_existing_series(stack: str, render_raw: Any) -> None:
    raw = stack_raw(stack)
    raw["observability"] = {**raw.get("observability", {}), "enabled": True}
    render = render_raw(raw, stack=stack)
    problems, count = check_queries(render.spec, render.rendered)
    assert problems == []
    assert count >= 9 + 8


def _check(expr: str, committed_render: Any) -> list[str]:
    return query_problems(committed_render(STACK).spec, Query("test", expr))


def test_a_series_missing_from_a_models_release_is_found(committed_render: Any) -> None:
    # bge-reranker runs vLLM 0.9.2: no kv_cache_usage_perc yet; the others run 0.33: no gpu_cache_usage_perc.
    assert _check('vllm:kv_cache_usage_perc{model="bge-reranker"}', committed_render) == [
        "test: `vllm:kv_cache_usage_perc` does not exist in the vLLM release of `bge-reranker`"
    ]
    assert "`qwen3-8b`" in _check("max(vllm:gpu_cache_usage_perc)", committed_render)[0]
    assert _check('vllm:gpu_cache_usage_perc{model="bge-reranker"}', committed_render) == []
    assert _check('vllm:num_requests_waiting{model="nobody"}', committed_render) == [
        "test: `vllm:num_requests_waiting` selects none of the stack's models"
    ]


def test_unknown_series_volcano_names_and_syntax_are_found(committed_render: Any) -> None:
    assert _check("volcano_queue_capacity_scalar_resources", committed_render) == []
    assert "`proportion`" not in "".join(_check("volcano_queue_weight", committed_render))
    assert _check("volcano_queue_weight", committed_render) == [
        "test: Volcano does not expose `volcano_queue_weight` with the `capacity` queue plugin"
    ]
    assert _check("volcano_unschedule_job_counts", committed_render)  # the misspelling of upstream's design doc
    assert _check("gpu_utilization", committed_render) == ["test: `gpu_utilization` is no series this platform knows"]
    assert "does not parse as PromQL" in _check("sum(up", committed_render)[0]


def test_the_catalog_reflects_the_renames() -> None:
    old, current = vllm_series((0, 9, 2)), vllm_series((0, 33, 0))
    assert "vllm:gpu_cache_usage_perc" in old and "vllm:gpu_cache_usage_perc" not in current
    assert "vllm:time_per_output_token_seconds_bucket" in vllm_series((0, 11, 0))
    assert "vllm:time_per_output_token_seconds_bucket" not in vllm_series((0, 12, 0))
    assert {"vllm:prompt_tokens_total", "vllm:time_to_first_token_seconds_bucket"} <= old & current
    assert "vllm:kv_block_lifetime_seconds_bucket" not in current  # only with --kv-cache-metrics
    assert "volcano_queue_capacity_scalar_resources" in volcano_series("capacity")
    assert "volcano_queue_capacity_scalar_resources" not in volcano_series("proportion")


# -- promtool: the rules are valid and fire when they should -----------------------------------------


def _promtool() -> str:
    path = shutil.which("promtool")
    assert path, "the rule tests need promtool (Debian package `prometheus`): run `make test`, which installs it"
    return path


def _rule_file(render: StackRender, directory: Path) -> Path:
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": _rule(render)["spec"]["groups"]}, sort_keys=False))
    return path


@pytest.mark.parametrize("stack", ["dev", "aicloud-a", STACK])
def test_promtool_accepts_the_rules(stack: str, render_raw: Any, tmp_path: Path) -> None:
    raw = stack_raw(stack)
    raw["observability"] = {**raw.get("observability", {}), "enabled": True}
    rules = _rule_file(render_raw(raw, stack=stack), tmp_path)
    proc = subprocess.run([_promtool(), "check", "rules", rules], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def _expect(alerts: dict[str, dict[str, Any]], name: str, labels: dict[str, str], summary: str) -> dict[str, Any]:
    """An expected alert: its labels (the rule's own added) and annotations (only the summary is
    a template, so it is spelled out; the others are the rule's text)."""
    rule = alerts[name]
    return {
        "exp_labels": {**labels, **rule["labels"]},
        "exp_annotations": {**rule["annotations"], "summary": summary},
    }


def test_alerts_fire_on_trouble_and_stay_quiet_otherwise(committed_render: Any, tmp_path: Path) -> None:
    render = committed_render(STACK)
    alerts = _alerts(render)
    rules = _rule_file(render, tmp_path)
    chat, search = 'namespace="chat",tenant="chat"', 'namespace="search",tenant="search"'
    series = {
        # qwen3-8b queues 20 requests; bge-reranker 3; a model of no stack here 50.
        f'vllm:num_requests_waiting{{{chat},model="qwen3-8b",pod="q1"}}': "20x20",
        f'vllm:num_requests_waiting{{{search},model="bge-reranker",pod="b1"}}': "3x20",
        'vllm:num_requests_waiting{namespace="other",tenant="x",model="not-ours",pod="o1"}': "50x20",
        # bge-reranker (vLLM 0.9.2) reports under the old name; a new-name series of it is not read.
        f'vllm:gpu_cache_usage_perc{{{search},model="bge-reranker",pod="b1"}}': "0.99x20",
        f'vllm:kv_cache_usage_perc{{{search},model="bge-reranker",pod="b2"}}': "0.99x20",
        f'vllm:kv_cache_usage_perc{{{chat},model="qwen3-8b",pod="q1"}}': "0.5x20",
        # qwen3-8b should run 2 replicas and has none; qwen3-32b-batch is scaled to zero; llama is fine.
        'kube_deployment_spec_replicas{namespace="chat",deployment="qwen3-8b"}': "2x20",
        'kube_deployment_status_replicas_available{namespace="chat",deployment="qwen3-8b"}': "0x20",
        'kube_deployment_spec_replicas{namespace="search",deployment="qwen3-32b-batch"}': "0x20",
        'kube_deployment_status_replicas_available{namespace="search",deployment="qwen3-32b-batch"}': "0x20",
        'kube_statefulset_replicas{namespace="chat",statefulset="llama-70b"}': "1x20",
        'kube_statefulset_status_replicas_ready{namespace="chat",statefulset="llama-70b"}': "1x20",
        f'up{{{chat},model="qwen3-8b",pod="q1",job="chat/qwen3-8b"}}': "0x20",
        f'up{{{chat},model="llama-70b",pod="l1",job="chat/llama-70b"}}': "1x20",
        # The scheduler is up, the controller is not scraped at all.
        'up{namespace="volcano-system",job="volcano-scheduler-service"}': "1x20",
        # chat uses all 160 GPUs it may; search 10 of 96.
        'volcano_queue_allocated_scalar_resources{queue_name="chat",resource="nvidia.com/gpu"}': "160x20",
        'volcano_queue_capacity_scalar_resources{queue_name="chat",resource="nvidia.com/gpu"}': "160x20",
        'volcano_queue_allocated_scalar_resources{queue_name="search",resource="nvidia.com/gpu"}': "10x20",
        'volcano_queue_capacity_scalar_resources{queue_name="search",resource="nvidia.com/gpu"}': "96x20",
        'volcano_unschedule_task_count{job_id="llama-70b-1"}': "2x20",
        'volcano_unschedule_task_count{job_id="fits"}': "0x20",
        'volcano_queue_pod_group_pending_count{queue_name="search"}': "1x20",
        'volcano_queue_pod_group_pending_count{queue_name="chat"}': "0x20",
    }
    qwen = {"namespace": "chat", "tenant": "chat", "model": "qwen3-8b"}
    checks = [
        (
            "6m",
            "VllmRequestsQueueing",
            [_expect(alerts, "VllmRequestsQueueing", qwen, "20 requests wait in model qwen3-8b")],
        ),
        (
            "12m",
            "VllmKvCacheNearlyFull",
            [
                _expect(
                    alerts,
                    "VllmKvCacheNearlyFull",
                    {"namespace": "search", "tenant": "search", "model": "bge-reranker", "pod": "b1"},
                    "KV cache of model bge-reranker on b1 is 99% full",
                )
            ],
        ),
        ("5m", "VllmKvCacheNearlyFull", []),  # not yet: it must hold for 10 minutes
        (
            "6m",
            "VllmModelNoReadyReplica",
            [
                _expect(
                    alerts,
                    "VllmModelNoReadyReplica",
                    {"namespace": "chat", "deployment": "qwen3-8b"},
                    "Model chat/qwen3-8b has no ready replica",
                )
            ],
        ),
        (
            "6m",
            "VllmMetricsDown",
            [
                _expect(
                    alerts,
                    "VllmMetricsDown",
                    {**qwen, "pod": "q1", "job": "chat/qwen3-8b"},
                    "Metrics of model qwen3-8b (q1) cannot be scraped",
                )
            ],
        ),
        ("6m", "VolcanoSchedulerDown", []),
        (
            "6m",
            "VolcanoControllerDown",
            [
                _expect(
                    alerts,
                    "VolcanoControllerDown",
                    {"namespace": "volcano-system", "job": "volcano-controllers-service"},
                    "The Volcano controller is down or not scraped",
                )
            ],
        ),
        (
            "16m",
            "VolcanoQueueAtCapability",
            [
                _expect(
                    alerts,
                    "VolcanoQueueAtCapability",
                    {"queue_name": "chat", "resource": "nvidia.com/gpu"},
                    "Queue chat has used all its nvidia.com/gpu",
                )
            ],
        ),
        (
            "16m",
            "VolcanoGangUnschedulable",
            [
                _expect(
                    alerts,
                    "VolcanoGangUnschedulable",
                    {"job_id": "llama-70b-1"},
                    "PodGroup llama-70b-1 has 2 task(s) that cannot be scheduled",
                )
            ],
        ),
        (
            "16m",
            "VolcanoPodGroupsWaiting",
            [
                _expect(
                    alerts,
                    "VolcanoPodGroupsWaiting",
                    {"queue_name": "search"},
                    "1 PodGroup(s) wait in queue search",
                )
            ],
        ),
    ]
    test = {
        "rule_files": [rules.name],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "alert_rule_test": [
                    {"eval_time": at, "alertname": name, "exp_alerts": expected} for at, name, expected in checks
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False, width=1000))
    proc = subprocess.run(
        [_promtool(), "test", "rules", "test.yaml"], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {name for _, name, _ in checks} == set(alerts), "every alert is exercised"


# -- the dashboard ----------------------------------------------------------------------------------


def _dashboard(render: StackRender) -> dict[str, Any]:
    configmap = _objects(render, "ConfigMap")[CONFIGMAP_NAME]
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
    assert rows == {"Scheduler": None, "Queue $queue": "queue", "Model $model": "model"}
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
    raw["models"] = {f"model-{i:03d}": {**template, "autoscaling": None} for i in range(400)}
    raw["tenants"]["chat"]["queue"]["capability"] = {"nvidia.com/gpu": 4000}
    raw["topology"]["domains"]["spine-b1"]["domains"]["leaf-b1"]["nodes"] = ["gpu-b-[001-600]"]
    spec = load(raw)
    text = json.dumps(dashboard(spec))
    assert len(text) < 64 * 1024  # the ConfigMap limit is 1 MiB; the text grows by a name per model
    assert len(json.loads(text)["templating"]["list"][1]["query"].split(",")) == 400


# -- autoscaling ------------------------------------------------------------------------------------


def test_autoscalers_target_the_workload_and_its_scale_subresource(committed_render: Any) -> None:
    render = committed_render(STACK)
    scaled = _objects(render, "ScaledObject")
    assert set(scaled) == {"qwen3-8b", "llama-70b", "qwen3-32b-batch"}
    assert scaled["llama-70b"]["spec"]["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "llama-70b",
    }
    (trigger,) = scaled["llama-70b"]["spec"]["triggers"]
    assert trigger["metadata"] == {
        "serverAddress": "http://kube-prometheus-stack-prometheus.monitoring:9090",
        "query": 'sum(vllm:kv_cache_usage_perc{namespace="chat",model="llama-70b"})',
        "threshold": "0.75",
    }
    zero = scaled["qwen3-32b-batch"]["spec"]
    assert zero["minReplicaCount"] == 0 and [t["name"] for t in zero["triggers"]] == ["load", "activation"]
    hpa = _objects(render, "HorizontalPodAutoscaler")["qwen3-30b"]["spec"]
    assert hpa["metrics"][0]["pods"]["metric"]["name"] == "vllm_num_requests_running"
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 4)


def test_an_autoscaled_workload_has_no_replicas_for_pulumi_to_reset(committed_render: Any) -> None:
    render = committed_render(STACK)
    workloads = {**_objects(render, "Deployment"), **_objects(render, "LeaderWorkerSet")}
    for name, manifest in workloads.items():
        autoscaled = render.spec.models[name].config.autoscaling is not None
        assert ("replicas" in manifest["spec"]) is not autoscaled, name


def test_changing_the_autoscaler_changes_only_the_autoscaler(render_raw: Any, tmp_path: Path) -> None:
    before = stack_raw(STACK)
    after = mutate(before, lambda r: r["models"]["qwen3-8b"]["autoscaling"].update(minReplicas=3, maxReplicas=6))
    write_render(render_raw(before), tmp_path / "before")
    write_render(render_raw(after), tmp_path / "after")
    result, _ = diff_dirs(tmp_path / "before", tmp_path / "after")
    assert result.changed == ["manifests/ScaledObject.chat.qwen3-8b.yaml"]


def test_feasibility_and_quota_count_max_replicas(render_raw: Any) -> None:
    from config import ConfigError

    raw = mutate(stack_raw(STACK), lambda r: r["models"]["qwen3-8b"]["autoscaling"].update(maxReplicas=200))
    with pytest.raises(ConfigError) as error:
        load(raw)
    assert "models.qwen3-8b.autoscaling.maxReplicas" in str(error.value)
    assert "lower `autoscaling.maxReplicas`" in str(error.value)


def test_a_model_that_may_scale_to_zero_holds_no_quota_in_its_pod_group(render_raw: Any) -> None:
    raw = stack_raw(STACK)
    raw["models"]["llama-70b"]["autoscaling"].update(
        minReplicas=0, activation={"query": 'sum(rate(gateway_requests_total{route="llama"}[2m]))'}
    )
    group = _objects(render_raw(raw), "PodGroup")["llama-70b"]["spec"]
    assert "minResources" not in group and group["minMember"] == 2
    assert "minResources" in _objects(render_raw(stack_raw(STACK)), "PodGroup")["llama-70b"]["spec"]


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
    assert subjects == {"monitoring.coreos.com", "keda.sh", "observability.dashboard.namespace"}
    ready = state_from_objects(
        [
            _crd("podmonitors", "monitoring.coreos.com"),
            _crd("servicemonitors", "monitoring.coreos.com"),
            _crd("prometheusrules", "monitoring.coreos.com"),
            _crd("scaledobjects", "keda.sh"),
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
    assert report.issues == [] and report.checked == len(objects) == 5 + 2 + 1 + 3
    spec = {**objects[0].manifest["spec"], "podMetricsEndpoint": []}  # a typo the API server would drop
    broken = dataclasses.replace(objects[0], manifest={**objects[0].manifest, "spec": spec})
    assert validate_objects([broken], "1.33", schema_dirs(render.spec)).issues
