"""Labels the platform puts on what it creates, so operators can select and audit them."""

from __future__ import annotations

MANAGED_BY = {"app.kubernetes.io/managed-by": "volcano-platform"}
TENANT_LABEL = "volcano-platform.io/tenant"
MODEL_LABEL = "volcano-platform.io/model"
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
