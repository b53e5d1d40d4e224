"""Which Prometheus series Volcano, kube-state-metrics and Prometheus expose: the only names the
scheduler alerts and dashboard panels may query.

- Volcano v1.15.1 (`pkg/scheduler/metrics`, `pkg/controllers/metrics`): client_golang adds no
  suffix. Some queue series are set only by one queue plugin.
- kube-state-metrics v2.20 (`docs/metrics/workload/*.md`) and Prometheus itself: the few series
  the rules use."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final, Literal

from config.upstream.monitoring import MetricKind, exposed_series

QueuePlugin = Literal["capacity", "proportion"]


@dataclass(frozen=True)
class VolcanoMetric:
    kind: MetricKind
    component: Literal["scheduler", "controller"]
    set_by: QueuePlugin | None = None
    """Only this queue plugin sets the series (None: set whatever the plugin)."""


VOLCANO_METRICS_VERSION: Final = (1, 15)
VOLCANO_SCALAR_MILLI: Final = 1000
"""Volcano counts extended resources (GPUs, RDMA devices) in milli-units and exports them so in its
queue gauges (`AddScalar(..., MilliValue())` in pkg/scheduler/api/resource_info.go, exported as is by
pkg/scheduler/metrics/queue.go): one GPU reads 1000."""
_QUEUE_RESOURCE_GAUGES = ("milli_cpu", "memory_bytes", "scalar_resources")
VOLCANO_METRICS: Final[dict[str, VolcanoMetric]] = {
    "volcano_e2e_scheduling_latency_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_open_session_duration_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_e2e_job_scheduling_latency_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_e2e_job_scheduling_duration": VolcanoMetric("gauge", "scheduler"),
    "volcano_e2e_job_scheduling_start_time": VolcanoMetric("gauge", "scheduler"),
    "volcano_e2e_job_scheduling_last_time": VolcanoMetric("gauge", "scheduler"),
    "volcano_plugin_scheduling_latency_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_action_scheduling_latency_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_task_scheduling_latency_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_scheduling_stage_duration_milliseconds": VolcanoMetric("histogram", "scheduler"),
    "volcano_pod_preemption_victims": VolcanoMetric("gauge", "scheduler"),
    "volcano_total_preemption_attempts": VolcanoMetric("counter", "scheduler"),
    "volcano_unschedule_task_count": VolcanoMetric("gauge", "scheduler"),
    "volcano_unschedule_job_count": VolcanoMetric("gauge", "scheduler"),
    "volcano_job_share": VolcanoMetric("gauge", "scheduler"),
    "volcano_job_retry_counts": VolcanoMetric("counter", "scheduler"),
    **{
        f"volcano_queue_{what}_{unit}": VolcanoMetric("gauge", "scheduler")
        for what in ("allocated", "request", "deserved")
        for unit in _QUEUE_RESOURCE_GAUGES
    },
    "volcano_queue_share": VolcanoMetric("gauge", "scheduler"),
    "volcano_queue_overused": VolcanoMetric("gauge", "scheduler"),
    "volcano_queue_weight": VolcanoMetric("gauge", "scheduler", set_by="proportion"),
    **{
        f"volcano_queue_{what}_{unit}": VolcanoMetric("gauge", "scheduler", set_by="capacity")
        for what in ("capacity", "real_capacity")
        for unit in _QUEUE_RESOURCE_GAUGES
    },
    **{
        f"volcano_queue_pod_group_{state}_count": VolcanoMetric("gauge", "controller")
        for state in ("inqueue", "pending", "running", "unknown", "completed")
    },
}


@cache
def volcano_series(queue_plugin: QueuePlugin) -> frozenset[str]:
    """Series the Volcano scheduler and controller expose with `queue_plugin` in the policy."""
    out: set[str] = set()
    for name, metric in VOLCANO_METRICS.items():
        if metric.set_by in (None, queue_plugin):
            out.update(exposed_series(name, metric.kind, suffix_total=False))
    return frozenset(out)


# kube-state-metrics v2.20 (docs/metrics/workload/*.md) series the rules use, and Prometheus' own.
KUBE_STATE_METRICS: Final = frozenset(
    {
        "kube_deployment_spec_replicas",
        "kube_deployment_status_replicas_available",
        "kube_deployment_status_replicas_updated",
        "kube_statefulset_replicas",
        "kube_statefulset_status_replicas_ready",
        "kube_statefulset_status_replicas_updated",
        "kube_pod_status_ready",
    }
)
PROMETHEUS_SERIES: Final = frozenset({"up"})
