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
    """`spec.replicas`, unless an autoscaler owns it: Pulumi applies with Server-Side Apply, and a
    count in the manifest would be re-applied on every `pulumi up`, undoing the autoscaler. Left
    out, the field belongs to whoever set it last (the autoscaler; 1 on creation)."""
    return {} if model.config.autoscaling is not None else {"replicas": model.config.replicas}
