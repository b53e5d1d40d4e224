"""The stack's Grafana dashboard (pure): the scheduler, each tenant queue and each model.

Rows repeat over two dashboard variables, `queue` and `model`, whose values are the stack's
queues and models: one row per model, while the JSON grows by a name per model, not by a row of
panels, so it stays far below a ConfigMap's 1 MiB at hundreds of models. Queries read each model
under the metric names its vLLM release exposes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from components.observability.alerts import one_of
from config.platform_labels import MANAGED_BY, MODEL_METRIC_LABEL
from config.spec.platform import PlatformSpec
from config.upstream.inference_gateway import QUEUE_DURATION_METRIC, QUEUE_SIZE_METRIC
from config.upstream.vllm_metrics import kv_cache_usage_metric
from config.upstream.volcano_metrics import VOLCANO_SCALAR_MILLI

DASHBOARD_UID = "volcano-platform"
CONFIGMAP_NAME = "volcano-platform-dashboard"
DASHBOARD_FILE = "volcano-platform.json"
FOLDER_ANNOTATION = "grafana_folder"
PANEL_HEIGHT = 8
WIDTH = 24


class _Layout:
    """Places panels left to right in rows of 24 columns, numbering them."""

    def __init__(self, datasource: dict[str, str]):
        self.datasource = datasource
        self.panels: list[dict[str, Any]] = []
        self.y = 0
        self.x = 0

    def row(self, title: str, repeat: str | None = None) -> None:
        self._newline()
        panel: dict[str, Any] = {
            "type": "row",
            "title": title,
            "collapsed": False,
            "gridPos": {"h": 1, "w": WIDTH, "x": 0, "y": self.y},
            "id": len(self.panels) + 1,
            "panels": [],
        }
        if repeat:
            panel["repeat"] = repeat
        self.panels.append(panel)
        self.y += 1

    def graph(self, title: str, unit: str, width: int, targets: list[tuple[str, str]]) -> None:
        if self.x + width > WIDTH:
            self._newline()
        self.panels.append(
            {
                "type": "timeseries",
                "title": title,
                "id": len(self.panels) + 1,
                "datasource": self.datasource,
                "gridPos": {"h": PANEL_HEIGHT, "w": width, "x": self.x, "y": self.y},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "options": {
                    "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "none"},
                },
                "targets": [
                    {"refId": chr(ord("A") + i), "datasource": self.datasource, "expr": expr, "legendFormat": legend}
                    for i, (expr, legend) in enumerate(targets)
                ],
            }
        )
        self.x += width

    def _newline(self) -> None:
        if self.x:
            self.y += PANEL_HEIGHT
            self.x = 0


def _variable(name: str, label: str, values: list[str]) -> dict[str, Any]:
    return {
        "type": "custom",
        "name": name,
        "label": label,
        "query": ",".join(values),
        "multi": True,
        "includeAll": True,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "options": [],
        "hide": 0,
    }


def _kv_cache_query(spec: PlatformSpec) -> str:
    """KV-cache usage of the row's model, under the name its release exposes; when the stack runs
    releases on both sides of the rename, each name is limited to the models that expose it."""
    by_metric: dict[str, list[str]] = defaultdict(list)
    for model in spec.models.values():
        by_metric[kv_cache_usage_metric(model.vllm_version)].append(model.name)
    row = f'{MODEL_METRIC_LABEL}="$model"'
    if len(by_metric) == 1:
        (metric,) = by_metric
        return f"max by (pod) ({metric}{{{row}}})"
    reads = " or ".join(
        f"{metric}{{{row},{MODEL_METRIC_LABEL}{one_of(names)}}}" for metric, names in sorted(by_metric.items())
    )
    return f"max by (pod) ({reads})"


def _unschedulable_query(spec: PlatformSpec) -> str:
    """Tasks that cannot be scheduled, for the stack's own PodGroups when it has any (the label is
    the PodGroup's name), else for every PodGroup."""
    groups = sorted(name for m in spec.models.values() for name in m.pod_group_names)
    selector = f"{{job_id{one_of(groups)}}}" if groups else ""
    return f"max by (job_id) (volcano_unschedule_task_count{selector}) > 0"


def _gateway_row(layout: _Layout, pools: tuple[str, ...]) -> None:
    """The routers' queues per band and tenant: who waits, how long, and what is given up. One
    row over every pool behind the gateway, a series per pool and band (bands are few)."""
    selector = f"{{inference_pool{one_of(pools)}}}"
    duration = QUEUE_DURATION_METRIC
    layout.row("Inference gateway")
    layout.graph(
        "Requests held, per pool and band",
        "short",
        8,
        [
            (
                f"sum by (inference_pool, priority) ({QUEUE_SIZE_METRIC}{selector})",
                "{{inference_pool}} band {{priority}}",
            )
        ],
    )
    layout.graph(
        "Time in the queue, p90 per pool and band",
        "s",
        8,
        [
            (
                "histogram_quantile(0.9, sum by (le, inference_pool, priority) "
                f"(rate({duration}_bucket{selector}[5m])))",
                "{{inference_pool}} band {{priority}}",
            )
        ],
    )
    layout.graph(
        "Requests per tenant and outcome",
        "reqps",
        8,
        [
            (
                f"sum by (fairness_id, outcome) (rate({duration}_count{selector}[5m]))",
                "{{fairness_id}} {{outcome}}",
            )
        ],
    )


def dashboard(spec: PlatformSpec) -> dict[str, Any]:
    observability = spec.config.observability
    layout = _Layout({"type": "prometheus", "uid": observability.dashboard.datasource_uid})
    queues = sorted(t.queue_name for t in spec.tenants.values())
    models = sorted(spec.models)
    gpu = spec.gpu_resource

    if observability.volcano:
        layout.row("Scheduler")
        layout.graph(
            "Tasks that cannot be scheduled, per PodGroup",
            "short",
            8,
            [(_unschedulable_query(spec), "{{job_id}}")],
        )
        if queues:
            layout.graph(
                "PodGroups waiting for their queue",
                "short",
                8,
                [(f"volcano_queue_pod_group_pending_count{{queue_name{one_of(queues)}}}", "{{queue_name}}")],
            )
        layout.graph(
            "Scheduling cycle, p99",
            "ms",
            8,
            [
                (
                    "histogram_quantile(0.99, sum by (le) "
                    "(rate(volcano_e2e_scheduling_latency_milliseconds_bucket[5m])))",
                    "p99",
                )
            ],
        )
    if queues:
        layout.row("Queue $queue", repeat="queue")
        selector = f'{{queue_name="$queue",resource="{gpu}"}}'
        # Volcano exports extended resources as milli-values: 128 GPUs read 128000.
        per_unit = f" / {VOLCANO_SCALAR_MILLI}"
        targets = [
            (f"volcano_queue_allocated_scalar_resources{selector}{per_unit}", "allocated"),
            (f"volcano_queue_deserved_scalar_resources{selector}{per_unit}", "deserved"),
        ]
        if spec.config.volcano.scheduler.queue_plugin == "capacity":
            targets.append((f"volcano_queue_capacity_scalar_resources{selector}{per_unit}", "capability"))
        layout.graph(f"{gpu}: allocated, deserved and capability", "short", WIDTH, targets)
    if models:
        row = f'{{{MODEL_METRIC_LABEL}="$model"}}'
        layout.row("Model $model", repeat="model")
        layout.graph(
            "Throughput",
            "tokens/s",
            8,
            [
                (f"sum(rate(vllm:prompt_tokens_total{row}[5m]))", "prompt"),
                (f"sum(rate(vllm:generation_tokens_total{row}[5m]))", "generation"),
            ],
        )
        layout.graph(
            "Time to first token",
            "s",
            8,
            [
                (
                    f"histogram_quantile({q}, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{row}[5m])))",
                    f"p{int(q * 100)}",
                )
                for q in (0.5, 0.95)
            ],
        )
        layout.graph(
            "Time waiting for the batch",
            "s",
            8,
            [
                (
                    f"histogram_quantile(0.95, sum by (le) (rate(vllm:request_queue_time_seconds_bucket{row}[5m])))",
                    "p95",
                )
            ],
        )
        layout.graph(
            "Requests",
            "short",
            12,
            [
                (f"sum(vllm:num_requests_running{row})", "running"),
                (f"sum(vllm:num_requests_waiting{row})", "waiting"),
            ],
        )
        layout.graph("KV-cache usage", "percentunit", 12, [(_kv_cache_query(spec), "{{pod}}")])

    if spec.gateway is not None and spec.gateway.config.router.flow_control.enabled:
        _gateway_row(layout, spec.gateway.models)

    variables = []
    if queues:
        variables.append(_variable("queue", "Queue", queues))
    if models:
        variables.append(_variable("model", "Model", models))
    return {
        "uid": DASHBOARD_UID,
        "title": f"volcano-platform: {spec.stack}",
        "tags": ["volcano-platform", "vllm", "volcano"],
        "timezone": "browser",
        "editable": False,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": variables},
        "annotations": {"list": []},
        "panels": layout.panels,
    }


def dashboard_configmap(spec: PlatformSpec) -> dict[str, Any]:
    observability = spec.config.observability
    metadata: dict[str, Any] = {
        "name": CONFIGMAP_NAME,
        "namespace": observability.dashboard_namespace,
        "labels": {**MANAGED_BY, **observability.dashboard.labels},
    }
    if observability.dashboard.folder:
        metadata["annotations"] = {FOLDER_ANNOTATION: observability.dashboard.folder}
    text = json.dumps(dashboard(spec), indent=1, sort_keys=True)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {DASHBOARD_FILE: text}}
