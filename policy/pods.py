"""Finding pod templates and containers in Kubernetes objects, for the policy rules.

Rules see resource properties as the engine reports them (camelCase manifests); during a preview
some values may still be unknown, so every accessor tolerates missing or non-dict values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from config.platform_labels import ALLOW_UNCONFINED_ANNOTATION
from config.upstream.volcano import GROUP_NAME_ANNOTATION, QUEUE_ANNOTATION

__all__ = ["ALLOW_UNCONFINED_ANNOTATION", "GROUP_NAME_ANNOTATION", "QUEUE_ANNOTATION"]

# Where each workload kind keeps its pod template(s).
TEMPLATE_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Pod": ((),),
    "Deployment": (("spec", "template"),),
    "StatefulSet": (("spec", "template"),),
    "DaemonSet": (("spec", "template"),),
    "ReplicaSet": (("spec", "template"),),
    "Job": (("spec", "template"),),
    "CronJob": (("spec", "jobTemplate", "spec", "template"),),
    "LeaderWorkerSet": (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
}


def get(data: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data


def kind_of(props: Mapping[str, Any]) -> str:
    kind = props.get("kind")
    return kind if isinstance(kind, str) else ""


def pod_templates(props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, template) for every pod template of a workload object."""
    for path in TEMPLATE_PATHS.get(kind_of(props), ()):
        template = get(props, *path) if path else props
        if isinstance(template, Mapping):
            yield ".".join(path) or "(pod)", template


def containers(template: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers"):
        for container in get(template, "spec", key) or []:
            if isinstance(container, Mapping):
                yield container


def is_gpu(resource: str) -> bool:
    return "gpu" in resource.lower()


def is_device(resource: str) -> bool:
    """GPUs and RDMA devices: requests must equal limits so gangs and quotas count them."""
    return is_gpu(resource) or "rdma" in resource.lower()


def requested_resources(container: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for section in ("requests", "limits"):
        resources = get(container, "resources", section)
        if isinstance(resources, Mapping):
            names.update(str(k) for k in resources)
    return names


def uses_gpus(template: Mapping[str, Any]) -> bool:
    return any(is_gpu(r) for c in containers(template) for r in requested_resources(c))
