"""A model's autoscaler (pure): a KEDA ScaledObject, or a HorizontalPodAutoscaler.

Both target the workload through its scale subresource: a Deployment's replicas, or a
LeaderWorkerSet's groups (one replica = one gang; LWS's scale selector picks the leaders, which
are also the only pods with vLLM metrics). Both hold a per-replica average: KEDA divides the
query's sum by the current replica count (target type AverageValue).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from components.inference.metadata import object_metadata
from components.observability.monitors import MODEL_METRIC_LABEL, SERVING_ROLE_METRIC_LABEL, SLICE_METRIC_LABEL
from config.sections.autoscaling import AutoscalingConfig
from config.sections.observability import ObservabilityConfig
from config.spec.model import ModelSpec
from config.upstream.lws import LWS_API_VERSION
from config.upstream.monitoring import KEDA_API_VERSION
from config.upstream.vllm_metrics import kv_cache_usage_metric

# The activation trigger only wakes a model from zero; its threshold is set so high that it
# never drives the replica count, which follows the vLLM metric.
ACTIVATION_ONLY_THRESHOLD = "1000000000"


def scale_target(model: ModelSpec) -> dict[str, str]:
    if model.multi_node or model.serving_role is not None:
        return {"apiVersion": LWS_API_VERSION, "kind": "LeaderWorkerSet", "name": model.workload_name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": model.name}


def metric_query(model: ModelSpec) -> str:
    """The model's load, summed over its serving pods."""
    scaling = _scaling(model)
    metric = {
        "requestsWaiting": "vllm:num_requests_waiting",
        "requestsRunning": "vllm:num_requests_running",
        "kvCacheUsage": kv_cache_usage_metric(model.vllm_version),
    }[scaling.metric]
    matchers = f'namespace="{model.namespace}",{MODEL_METRIC_LABEL}="{model.name}"'
    if model.serving_role is not None:  # one role of one slice
        matchers += f',{SLICE_METRIC_LABEL}="{model.slice_index}",{SERVING_ROLE_METRIC_LABEL}="{model.serving_role}"'
    return f"sum({metric}{{{matchers}}})"


def ratio_clamped_query(model: ModelSpec) -> str | None:
    """For prefill of a slice with a prefill/decode `ratio`: the prefill instances its load asks for
    (what KEDA would compute from `metric_query` and the target), clamped between `min` and `max`
    times the slice's decode instances that are up; the trigger's threshold is then 1, so KEDA's
    average target turns the value into that many instances. With no decode instance up the bounds
    are 0, and the role falls to its `minInstances`."""
    ratio = model.disaggregation.ratio if model.serving_role == "prefill" else None
    if ratio is None:
        return None
    scaling = _scaling(model)
    decode = (
        f'up{{namespace="{model.namespace}",{MODEL_METRIC_LABEL}="{model.name}",'
        f'{SLICE_METRIC_LABEL}="{model.slice_index}",{SERVING_ROLE_METRIC_LABEL}="decode"}}'
    )
    decode_up = f"scalar(count({decode} == 1) or vector(0))"
    wanted = f"ceil(({metric_query(model)} or vector(0)) / {_number(scaling.target)})"
    return f"clamp({wanted}, {_number(ratio.min)} * {decode_up}, {_number(ratio.max)} * {decode_up})"


def _scaling(model: ModelSpec) -> AutoscalingConfig:
    scaling = model.config.autoscaling
    if scaling is None:
        raise ValueError(f"model {model.name} has no autoscaling")
    return scaling


def _behavior(scaling: AutoscalingConfig) -> dict[str, Any]:
    return {"scaleDown": {"stabilizationWindowSeconds": scaling.scale_down_stabilization_seconds}}


def _number(value: float) -> str:
    """A plain decimal (`0.75`, `16`): KEDA reads thresholds as floats and PromQL takes no unit
    suffix, so never a quantity's `750m`."""
    amount = Decimal(str(value))
    return str(int(amount)) if amount == amount.to_integral_value() else format(amount.normalize(), "f")


def scaled_object_manifest(
    model: ModelSpec, observability: ObservabilityConfig, wake_up: str | None = None
) -> dict[str, Any]:
    """`wake_up`: the query of the requests the model's router holds, which wakes a model behind
    the gateway from zero when the stack gives no `activation` of its own."""
    scaling = _scaling(model)
    clamped = ratio_clamped_query(model)
    triggers: list[dict[str, Any]] = [
        {
            "type": "prometheus",
            "name": "load",
            "metadata": {
                "serverAddress": observability.query_url,
                "query": clamped or metric_query(model),
                "threshold": "1" if clamped else _number(scaling.target),
            },
        }
    ]
    if scaling.activation is not None:
        triggers.append(
            {
                "type": "prometheus",
                "name": "activation",
                "metadata": {
                    "serverAddress": observability.query_url,
                    "query": scaling.activation.query,
                    "threshold": ACTIVATION_ONLY_THRESHOLD,
                    "activationThreshold": _number(scaling.activation.threshold),
                },
            }
        )
    elif wake_up is not None and scaling.min_replicas == 0:
        triggers.append(
            {
                "type": "prometheus",
                "name": "wake-up",
                "metadata": {
                    "serverAddress": observability.query_url,
                    "query": wake_up,
                    "threshold": ACTIVATION_ONLY_THRESHOLD,
                    "activationThreshold": "0",
                },
            }
        )
    triggers += [
        {
            "type": "cron",
            "name": f"schedule-{index}",
            "metadata": {
                "timezone": window.timezone,
                "start": window.start,
                "end": window.end,
                "desiredReplicas": str(window.replicas),
            },
        }
        for index, window in enumerate(scaling.schedules)
    ]
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "ScaledObject",
        "metadata": object_metadata(model, model.workload_name),
        "spec": {
            "scaleTargetRef": scale_target(model),
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            "pollingInterval": scaling.polling_interval_seconds,
            "cooldownPeriod": scaling.cooldown_period_seconds,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": _behavior(scaling)}},
            "triggers": triggers,
        },
    }


def hpa_manifest(model: ModelSpec) -> dict[str, Any]:
    scaling = _scaling(model)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": object_metadata(model, model.name),
        "spec": {
            "scaleTargetRef": scale_target(model),
            "minReplicas": scaling.min_replicas,
            "maxReplicas": scaling.max_replicas,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": scaling.hpa_metric_name},
                        "target": {"type": "AverageValue", "averageValue": _number(scaling.target)},
                    },
                }
            ],
            "behavior": _behavior(scaling),
        },
    }


def autoscaler_manifest(
    model: ModelSpec, observability: ObservabilityConfig, wake_up: str | None = None
) -> dict[str, Any]:
    if _scaling(model).engine == "hpa":
        return hpa_manifest(model)
    return scaled_object_manifest(model, observability, wake_up)
