"""Google Cloud Managed Service for Prometheus as the observability backend (GKE's default): the
same scrapes, series labels and alerts as with prometheus-operator, as PodMonitorings and one
ClusterRules, valid against the CRDs generated from its module, with KEDA reading its query
frontend."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from config.errors import ConfigError
from config.sections.observability import ObservabilityConfig
from live.cluster_state import state_from_objects
from live.preflight import preflight
from offline.metric_check import check_queries
from offline.schemas import schema_dirs, validate_objects
from tests.components.helpers import STACK, objects_of_kind, prometheus_rule
from tests.conftest import load, mutate, stack_raw

MANAGED = mutate(stack_raw(STACK), lambda r: r["observability"].update(backend="google-managed"))


@pytest.fixture(scope="module")
def render(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from offline.render import render_stack
    from tests.conftest import PROJECT_DIR, write_stack

    path = write_stack(tmp_path_factory.mktemp("gmp") / "Pulumi.gmp.yaml", MANAGED)
    return render_stack(PROJECT_DIR, "gmp", path)


def test_every_model_router_and_volcano_is_a_pod_monitoring_with_the_same_series_labels(render: Any) -> None:
    kinds = {o.kind for o in render.rendered.objects}
    assert not kinds & {"PodMonitor", "ServiceMonitor", "PrometheusRule"}, "nothing for prometheus-operator"
    monitors = objects_of_kind(render, "PodMonitoring")
    routers = {f"{m}-epp" for m in render.spec.gateway.models}
    volcano = {"volcano-scheduler-service", "volcano-controllers-service"}
    assert set(monitors) == set(render.spec.models) | routers | volcano
    for name, model in render.spec.models.items():
        monitor = monitors[name]
        assert "release" not in monitor["metadata"]["labels"], "managed collection selects no label"
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint == {"port": "http", "path": "/metrics", "interval": "30s"}
        copied = {m["to"]: m["from"] for m in monitor["spec"]["targetLabels"]["fromPod"]}
        expected = {"model": "volcano-platform.io/model", "tenant": "volcano-platform.io/tenant"}
        if model.disaggregated:
            expected |= {"slice": "volcano-platform.io/slice", "serving_role": "volcano-platform.io/serving-role"}
        assert copied == expected
    # The pod labels copied carry the values prometheus-operator writes as constants.
    lws = objects_of_kind(render, "LeaderWorkerSet")["llama-70b"]["spec"]["leaderWorkerTemplate"]
    labels = lws["leaderTemplate"]["metadata"]["labels"]
    assert labels["volcano-platform.io/model"] == "llama-70b"
    assert labels["volcano-platform.io/tenant"] == render.spec.models["llama-70b"].tenant
    router = monitors[next(iter(routers))]
    assert {m["to"] for m in router["spec"]["targetLabels"]["fromPod"]} == {"tenant"}
    scheduler = monitors["volcano-scheduler-service"]
    assert scheduler["metadata"]["namespace"] == "volcano-system"
    assert scheduler["spec"]["selector"] == {"matchLabels": {"app": "volcano-scheduler"}}
    assert scheduler["spec"]["endpoints"][0]["port"] == 8080, "its container declares no port: by number"
    assert monitors["volcano-controllers-service"]["spec"]["endpoints"][0]["port"] == 8081


def test_the_alerts_are_one_cluster_rules_with_the_prometheus_rules_groups(render: Any, committed_render: Any) -> None:
    (rules,) = objects_of_kind(render, "ClusterRules").values()
    assert "namespace" not in rules["metadata"], "cluster-scoped: its rules see every tenant's series"
    assert rules["spec"]["groups"] == prometheus_rule(committed_render(STACK))["spec"]["groups"]
    alerts = {r["alert"]: r for group in rules["spec"]["groups"] for r in group["rules"]}
    down = alerts["VolcanoSchedulerDown"]["expr"]
    assert 'job="volcano-scheduler-service"' in down, "`job` is the PodMonitoring's name, as the Service's was"
    problems, checked = check_queries(render.spec, render.rendered)
    assert problems == [] and checked > len(alerts), "the rules' queries are checked too"


def test_the_objects_validate_against_the_generated_crds(render: Any) -> None:
    objects = [o for o in render.rendered.objects if o.kind in ("PodMonitoring", "ClusterRules")]
    report = validate_objects(objects, "1.33", schema_dirs(render.spec))
    assert report.issues == [] and report.checked == len(objects) > 3
    monitor = next(o for o in objects if o.kind == "PodMonitoring")
    relabel_cluster = {
        "port": "http",
        "interval": "30s",
        "metricRelabeling": [{"action": "replace", "targetLabel": "cluster"}],
    }
    for endpoint, why in (
        (relabel_cluster, "self != 'cluster'"),  # the rule's messageExpression is not evaluated here
        ({"port": 0, "interval": "30s"}, "Port is required"),
        ({"port": "http"}, "interval"),
    ):
        bad = dataclasses.replace(
            monitor, manifest={**monitor.manifest, "spec": {**monitor.manifest["spec"], "endpoints": [endpoint]}}
        )
        issues = validate_objects([bad], "1.33", schema_dirs(render.spec)).issues
        assert any(why in str(issue) for issue in issues), (why, issues)


def test_keda_reads_the_query_frontend(render: Any) -> None:
    assert ObservabilityConfig(backend="google-managed").query_url == "http://frontend.monitoring:9090"
    for scaled in objects_of_kind(render, "ScaledObject").values():
        for trigger in scaled["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                assert trigger["metadata"]["serverAddress"] == "http://frontend.monitoring:9090"


def test_settings_only_prometheus_operator_reads_are_refused() -> None:
    for key, value in (("release", "kps"), ("selectorLabels", {"prometheus": "main"})):
        raw = mutate(MANAGED, lambda r, k=key, v=value: r["observability"].update({k: v}))
        with pytest.raises(ConfigError) as caught:
            load(raw)
        (problem,) = caught.value.problems
        assert problem.path == "observability" and f"`{key}`" in problem.message


def test_preflight_needs_the_managed_collections_crds(render: Any) -> None:
    bare = preflight(render.spec, render.rendered, state_from_objects([], "empty"))
    subjects = {f.subject for f in bare.findings if f.check == "prerequisite-missing"}
    assert "monitoring.googleapis.com" in subjects and "monitoring.coreos.com" not in subjects
