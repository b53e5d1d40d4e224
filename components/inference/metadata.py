"""Metadata shared by a model's objects (pure): names, labels, and who owns the replica count."""

from __future__ import annotations

from typing import Any

from config.platform_labels import ALLOW_UNCONFINED_ANNOTATION, model_labels
from config.spec.model import ModelSpec


def object_metadata(model: ModelSpec, name: str) -> dict[str, Any]:
    """Name, namespace and the platform's labels of one of a model's objects."""
    return {
        "name": name,
        "namespace": model.namespace,
        "labels": {**model.config.labels, **model_labels(model.name, model.tenant)},
    }


def workload_metadata(model: ModelSpec) -> dict[str, Any]:
    metadata = object_metadata(model, model.name)
    if model.config.seccomp_profile == "Unconfined":
        # The stack asked for it explicitly; the policy pack accepts Unconfined only with this mark.
        metadata["annotations"] = {ALLOW_UNCONFINED_ANNOTATION: "true"}
    return metadata


def replicas_field(model: ModelSpec) -> dict[str, int]:
    """`spec.replicas`: the count, or under an autoscaler where a new workload starts (the
    workload then carries `ignoreChanges: [spec.replicas]`, `autoscaled_options`)."""
    return {"replicas": model.config.starting_replicas}
