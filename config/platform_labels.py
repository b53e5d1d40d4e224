"""Labels and annotations the platform puts on what it creates, so operators can select and audit
them. They live with the config because the checks refuse user labels and annotations that would
collide with them."""

from __future__ import annotations

MANAGED_BY = {"app.kubernetes.io/managed-by": "volcano-platform"}
TENANT_LABEL = "volcano-platform.io/tenant"
MODEL_LABEL = "volcano-platform.io/model"
ROLE_LABEL = "volcano-platform.io/role"
"""`leader` or `worker` on the pods of a LeaderWorkerSet."""
SLICE_LABEL = "volcano-platform.io/slice"
"""The slice (`0`, `1`, ...) of a model with prefill and decode apart, on its pods."""
SERVING_ROLE_LABEL = "volcano-platform.io/serving-role"
"""`prefill` or `decode` on the pods of a model with prefill and decode apart."""
MODEL_METRIC_LABEL = "model"
"""The label the model monitors put on every series scraped from a model; dashboards, alerts,
autoscaler queries and their checks select models by it."""
ROUTER_LABEL = "volcano-platform.io/router"
"""On a model's router pods (the model's name): NetworkPolicies select routers by it, which admit
the gateway and monitoring only."""
RESERVED_PREFIXES = (
    "volcano.sh/",
    "scheduling.volcano.sh/",
    "scheduling.k8s.io/",
    "pod-security.kubernetes.io/",
    "volcano-platform.io/",
    "leaderworkerset.sigs.k8s.io/",
    # GKE's device injector and multi-networking (`config.upstream.interconnects`).
    "devices.gke.io/",
    "networking.gke.io/",
)
"""Label and annotation keys the scheduler, LWS, the API server, the cloud or the platform act on
(the queue a pod is judged in, its gang, whether it may be preempted, what its namespace admits,
which node devices and networks its containers get): a tenant file never sets one; only the
platform does, with the values it derives."""
# Marks a workload whose stack config asked for seccomp Unconfined; the policy pack accepts it.
ALLOW_UNCONFINED_ANNOTATION = "volcano-platform.io/allow-unconfined-seccomp"


def model_labels(model: str, tenant: str) -> dict[str, str]:
    """Labels on a model's workload, pods and Services; the selector uses the first two."""
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": model,
        "app.kubernetes.io/component": "inference",
        MODEL_LABEL: model,
        TENANT_LABEL: tenant,
        **MANAGED_BY,
    }


def model_selector(model: str) -> dict[str, str]:
    """Immutable Deployment selector: stable across every other change to the model."""
    return {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": model}


def platform_label_keys() -> set[str]:
    """Every label key the platform sets on a model's workload and pods."""
    return {*model_labels("m", "t"), ROLE_LABEL, SLICE_LABEL, SERVING_ROLE_LABEL}
