"""Alert rules: every query names series that exist in each model's release, promtool accepts them,
and its unit tests show them firing on trouble and quiet otherwise."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.upstream.vllm_metrics import vllm_series
from config.upstream.volcano_metrics import volcano_series
from offline.metric_check import Query, check_queries, query_problems
from offline.render import StackRender
from tests.components.helpers import STACK, alerts_of, prometheus_rule
from tests.conftest import require_tool, stack_raw

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
    return require_tool(shutil.which("promtool"), "promtool (Debian package `prometheus`)")


def _rule_file(render: StackRender, directory: Path) -> Path:
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": prometheus_rule(render)["spec"]["groups"]}, sort_keys=False))
    return path


@pytest.mark.parametrize("stack", ["dev", "aicloud-a", STACK])
def test_promtool_accepts_the_rules(stack: str, render_raw: Any, tmp_path: Path) -> None:
    raw = stack_raw(stack)
    raw["observability"] = {**raw.get("observability", {}), "enabled": True}
    rules = _rule_file(render_raw(raw, stack=stack), tmp_path)
    proc = subprocess.run([_promtool(), "check", "rules", rules], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_alert_labels_are_prometheus_labels_which_promtool_accepts(render_raw: Any, tmp_path: Path) -> None:
    """Alert labels are Prometheus labels, not Kubernetes ones: a value with spaces and capitals,
    which no Kubernetes label could hold, is what a routing tree often matches on."""
    raw = stack_raw("dev")
    labels = {"route_to": "GPU platform (Shanghai)", "Team": "gpu"}
    raw["observability"] = {**raw.get("observability", {}), "enabled": True, "alerts": {"labels": labels}}
    render = render_raw(raw, stack="dev")
    assert all(alert["labels"].items() >= labels.items() for alert in alerts_of(render).values())
    rules = _rule_file(render, tmp_path)
    proc = subprocess.run([_promtool(), "check", "rules", rules], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _expect(alerts: dict[str, dict[str, Any]], name: str, labels: dict[str, str], summary: str) -> dict[str, Any]:
    """An expected alert: its labels (the rule's own added) and annotations (only the summary is
    a template, so it is spelled out; the others are the rule's text)."""
    rule = alerts[name]
    return {
        "exp_labels": {**labels, **rule["labels"]},
        "exp_annotations": {**rule["annotations"], "summary": summary},
    }


def _promtool_test(rules: Path, series: dict[str, str], checks: list[tuple[str, str, list[dict[str, Any]]]]) -> None:
    """`promtool test rules` of `rules` fed `series` (one sample a minute): at each evaluation time
    the named alert fires exactly as expected (an empty list: it stays quiet)."""
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
    (rules.parent / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False, width=1000))
    proc = subprocess.run(
        [_promtool(), "test", "rules", "test.yaml"], capture_output=True, text=True, check=False, cwd=rules.parent
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_alerts_fire_on_trouble_and_stay_quiet_otherwise(committed_render: Any, tmp_path: Path) -> None:
    render = committed_render(STACK)
    alerts = alerts_of(render)
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
        'kube_statefulset_replicas{namespace="chat",statefulset="llama-70b"}': "2x40",
        'kube_statefulset_status_replicas_ready{namespace="chat",statefulset="llama-70b"}': "1x40",
        f'up{{{chat},model="qwen3-8b",pod="q1",job="chat/qwen3-8b"}}': "0x40",
        f'up{{{chat},model="llama-70b",pod="l1",job="chat/llama-70b"}}': "1x40",
        # q1 is Ready but cannot be scraped; q2 still loads its weights (serves no HTTP, not Ready): a cold start.
        'kube_pod_status_ready{namespace="chat",pod="q1",condition="true"}': "1x40",
        f'up{{{chat},model="qwen3-8b",pod="q2",job="chat/qwen3-8b"}}': "0x40",
        'kube_pod_status_ready{namespace="chat",pod="q2",condition="true"}': "0x40",
        # llama-70b wants 2 groups and has 1 ready, every leader on the current template: one group waits.
        # bge-reranker wants 2 and has 1 ready while a rollout replaces it (1 of 2 updated): expected.
        'kube_statefulset_status_replicas_updated{namespace="chat",statefulset="llama-70b"}': "2x40",
        'kube_deployment_spec_replicas{namespace="search",deployment="bge-reranker"}': "2x40",
        'kube_deployment_status_replicas_available{namespace="search",deployment="bge-reranker"}': "1x40",
        'kube_deployment_status_replicas_updated{namespace="search",deployment="bge-reranker"}': "1x40",
        # The scheduler is up, the controller is not scraped at all.
        'up{namespace="volcano-system",job="volcano-scheduler-service"}': "1x20",
        # chat uses all 160 GPUs it may; search 10 of 96.
        'volcano_queue_allocated_scalar_resources{queue_name="chat",resource="nvidia.com/gpu"}': "160x20",
        'volcano_queue_capacity_scalar_resources{queue_name="chat",resource="nvidia.com/gpu"}': "160x20",
        'volcano_queue_allocated_scalar_resources{queue_name="search",resource="nvidia.com/gpu"}': "10x20",
        'volcano_queue_capacity_scalar_resources{queue_name="search",resource="nvidia.com/gpu"}': "96x20",
        # The stack's PodGroup llama-70b has 2 unschedulable tasks; another stack's PodGroup is not watched.
        'volcano_unschedule_task_count{job_id="llama-70b"}': "2x20",
        'volcano_unschedule_task_count{job_id="not-ours"}': "5x20",
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
            "30m",
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
        ("29m", "VllmModelReplicasMissing", []),  # llama-70b's load budget is 30 minutes
        (
            "31m",
            "VllmModelReplicasMissing",
            [
                _expect(
                    alerts,
                    "VllmModelReplicasMissing",
                    {"namespace": "chat", "statefulset": "llama-70b"},
                    "Model chat/llama-70b has 1 replica(s) fewer ready than wanted",
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
                    {"job_id": "llama-70b"},
                    "PodGroup llama-70b has 2 task(s) that cannot be scheduled",
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
    _promtool_test(rules, series, checks)
    exercised = {name for _, name, _ in checks} | set(GATEWAY_ALERTS)
    assert exercised == set(alerts), "every alert is exercised (the gateway's below)"


GATEWAY_ALERTS = ("InferenceRequestsHeld", "InferenceRequestsDropped", "InferenceQueueTimeHigh")


def test_gateway_alerts_fire_on_trouble_and_stay_quiet_otherwise(committed_render: Any, tmp_path: Path) -> None:
    render = committed_render(STACK)
    alerts = alerts_of(render)
    rules = _rule_file(render, tmp_path)
    batch = 'namespace="search",inference_pool="qwen3-32b-batch"'
    chat = 'namespace="chat",inference_pool="qwen3-8b"'
    duration = "inference_extension_flow_control_request_queue_duration_seconds"
    series = {
        # qwen3-32b-batch's router holds 3 requests for 40 minutes (it does not wake); qwen3-8b's
        # holds 2 for 10 minutes (a burst); a pool of no stack here holds 9.
        f'inference_extension_flow_control_queue_size{{{batch},priority="0",fairness_id="search"}}': "3x40",
        f'inference_extension_flow_control_queue_size{{{chat},priority="3",fairness_id="chat"}}': "2x10 0x30",
        'inference_extension_flow_control_queue_size{namespace="x",inference_pool="not-ours"}': "9x40",
        # qwen3-32b-batch's held requests expire; qwen3-8b's are all dispatched.
        f'{duration}_count{{{batch},priority="0",fairness_id="search",outcome="EvictedTTL"}}': "0+1x40",
        f'{duration}_count{{{chat},priority="3",fairness_id="chat",outcome="Dispatched"}}': "0+5x40",
        # qwen3-8b's band 0 waits 30-60 s for nine requests in ten; its band 3 under 10 s.
        **{
            f'{duration}_bucket{{{chat},priority="0",fairness_id="search",outcome="Dispatched",le="{le}"}}': v
            for le, v in (("10", "0+0x40"), ("30", "0+1x40"), ("60", "0+10x40"), ("+Inf", "0+10x40"))
        },
        **{
            f'{duration}_bucket{{{chat},priority="3",fairness_id="chat",outcome="Dispatched",le="{le}"}}': v
            for le, v in (("10", "0+10x40"), ("30", "0+10x40"), ("60", "0+10x40"), ("+Inf", "0+10x40"))
        },
    }
    held = {"namespace": "search", "inference_pool": "qwen3-32b-batch"}
    checks = [
        ("29m", "InferenceRequestsHeld", []),  # not yet: the queue may hold a request while a model loads (30 min)
        (
            "35m",
            "InferenceRequestsHeld",
            [_expect(alerts, "InferenceRequestsHeld", held, "3 requests wait in the router of search/qwen3-32b-batch")],
        ),
        (
            "10m",
            "InferenceRequestsDropped",
            [
                _expect(
                    alerts,
                    "InferenceRequestsDropped",
                    {**held, "priority": "0", "outcome": "EvictedTTL"},
                    "Requests of band 0 to qwen3-32b-batch end EvictedTTL",
                )
            ],
        ),
        (
            "15m",
            "InferenceQueueTimeHigh",
            [
                _expect(
                    alerts,
                    "InferenceQueueTimeHigh",
                    {"namespace": "chat", "inference_pool": "qwen3-8b", "priority": "0"},
                    "Requests of band 0 to qwen3-8b wait 56.67s (p90)",
                )
            ],
        ),
    ]
    _promtool_test(rules, series, checks)
    assert {name for _, name, _ in checks} == set(GATEWAY_ALERTS)
