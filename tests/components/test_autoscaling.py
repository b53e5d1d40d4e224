"""Autoscaling: KEDA and HPA target the workload's scale subresource, Pulumi never resets the replicas
an autoscaler owns, and the checks count maxReplicas."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.render import write_render
from offline.review import diff_dirs
from tests.components.helpers import STACK, objects_of_kind
from tests.conftest import load, mutate, paths_of, require_tool, stack_raw

# -- autoscaling ------------------------------------------------------------------------------------


def test_autoscalers_target_the_workload_and_its_scale_subresource(committed_render: Any) -> None:
    render = committed_render(STACK)
    scaled = objects_of_kind(render, "ScaledObject")
    assert set(scaled) == {
        "qwen3-8b",
        "llama-70b",
        "qwen3-32b-batch",
        "qwen3-235b-pd-s0-prefill",
        "qwen3-235b-pd-s1-prefill",
    }
    # A role of a slice scales its own LeaderWorkerSet, on its own pods' series.
    prefill = scaled["qwen3-235b-pd-s1-prefill"]["spec"]
    assert prefill["scaleTargetRef"]["name"] == "qwen3-235b-pd-s1-prefill"
    assert (prefill["minReplicaCount"], prefill["maxReplicaCount"]) == (1, 3)
    load = prefill["triggers"][0]["metadata"]
    assert (
        'sum(vllm:num_requests_waiting{namespace="search",model="qwen3-235b-pd",slice="1",serving_role="prefill"})'
        in (load["query"])
    )
    assert load["threshold"] == "1"  # the query is the instance count (test_the_prefill_query_keeps_the_ratio...)
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
    assert zero["minReplicaCount"] == 0 and [t["name"] for t in zero["triggers"]] == ["load", "wake-up", "schedule-0"]
    hpa = objects_of_kind(render, "HorizontalPodAutoscaler")["qwen3-30b"]["spec"]
    assert hpa["metrics"][0]["pods"]["metric"]["name"] == "vllm_num_requests_running"
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 4)


def test_an_autoscaled_workload_starts_at_its_count_and_pulumi_then_leaves_it_alone(committed_render: Any) -> None:
    render = committed_render(STACK)
    workloads = {**objects_of_kind(render, "Deployment"), **objects_of_kind(render, "LeaderWorkerSet")}
    ignored = {e["file"]: e.get("ignoreChanges") for e in render.rendered.index if e.get("file")}
    roles = {v.workload_name: v for m in render.spec.models.values() for v in m.slice_views()}
    for name, manifest in workloads.items():
        if manifest["metadata"]["labels"].get("app.kubernetes.io/component") == "router":
            continue  # a gateway router, not a model
        config = roles[name].config if name in roles else render.spec.models[name].config
        assert manifest["spec"]["replicas"] == config.starting_replicas, name
        file = next(o.file for o in render.rendered.objects if o.manifest is manifest)
        assert (ignored[file] == ["spec.replicas"]) is (config.autoscaling is not None), name


def test_switching_a_running_model_to_autoscaling_keeps_its_replicas(render_raw: Any, tmp_path: Path) -> None:
    """The switch keeps `spec.replicas` in the manifest and adds `ignoreChanges` on it, so the
    provider applies the live count (pulumi-kubernetes `handleSSAIgnoreFields`); the field is
    never removed, which would give it up and drop the workload to one replica."""
    fixed = mutate(
        stack_raw(STACK),
        lambda r: (r["models"]["qwen3-8b"].pop("autoscaling"), r["models"]["qwen3-8b"].update(replicas=4)),
    )
    scaled = mutate(
        stack_raw(STACK),
        lambda r: r["models"]["qwen3-8b"].update(
            replicas=4, autoscaling={"minReplicas": 2, "maxReplicas": 16, "metric": "requestsWaiting", "target": 5}
        ),
    )
    before = render_raw(fixed).rendered.find("Deployment", "qwen3-8b", "chat").manifest
    after_render = render_raw(scaled)
    after = after_render.rendered.find("Deployment", "qwen3-8b", "chat").manifest
    assert before["spec"]["replicas"] == after["spec"]["replicas"] == 4
    entry = next(e for e in after_render.rendered.index if e.get("file") == "manifests/Deployment.chat.qwen3-8b.yaml")
    assert entry["ignoreChanges"] == ["spec.replicas"]


def test_a_starting_count_outside_the_autoscalers_range_is_refused() -> None:
    raw = mutate(stack_raw(STACK), lambda r: r["models"]["qwen3-8b"].update(replicas=20))
    assert "models.qwen3-8b.replicas" in paths_of(raw)


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
    group = objects_of_kind(render_raw(raw), "PodGroup")["llama-70b"]["spec"]
    assert "minResources" not in group and group["minMember"] == 2
    assert "minResources" in objects_of_kind(render_raw(stack_raw(STACK)), "PodGroup")["llama-70b"]["spec"]


def test_the_prefill_query_keeps_the_ratio_to_the_decode_instances_up(committed_render: Any, tmp_path: Path) -> None:
    """The example's prefill of slice 0 (target 4 waiting requests, ratio 1 to 3 per decode
    instance) evaluated by promtool on series of both slices: the instances its load asks for,
    held between 1 and 3 times the decode instances of its own slice that are up."""
    render = committed_render(STACK)
    query = objects_of_kind(render, "ScaledObject")["qwen3-235b-pd-s0-prefill"]["spec"]["triggers"][0]["metadata"]
    labels = 'namespace="search",model="qwen3-235b-pd"'
    series = {
        # minutes:                                                     0  1  2 3 4 5 6 7
        f'vllm:num_requests_waiting{{{labels},slice="0",serving_role="prefill",pod="p0"}}': "40 40 0 0 8 8 8 8",
        f'up{{{labels},slice="0",serving_role="decode",pod="d0"}}': "1 1 1 1 1 1 0 0",
        f'up{{{labels},slice="0",serving_role="decode",pod="d1"}}': "0 0 0 0 0 0 0 0",
        # The other slice's load and decode instances count for nothing here.
        f'vllm:num_requests_waiting{{{labels},slice="1",serving_role="prefill",pod="p1"}}': "100x7",
        f'up{{{labels},slice="1",serving_role="decode",pod="d2"}}': "1x7",
        f'up{{{labels},slice="1",serving_role="decode",pod="d3"}}': "1x7",
    }
    expected = {
        "1m": 3,  # 40 waiting ask for 10 instances: 3 per decode instance at most
        "3m": 1,  # no load: 1 per decode instance at least
        "5m": 2,  # 8 waiting at 4 each, within the bounds
        "7m": 0,  # no decode instance up: no prefill beyond the role's own floor (minInstances)
    }
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "promql_expr_test": [
                    {"expr": query["query"], "eval_time": at, "exp_samples": [{"labels": "{}", "value": value}]}
                    for at, value in expected.items()
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False, width=1000))
    promtool = require_tool(shutil.which("promtool"), "promtool (Debian package `prometheus`)")
    proc = subprocess.run(
        [promtool, "test", "rules", "test.yaml"], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
