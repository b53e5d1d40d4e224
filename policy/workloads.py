"""Policies on workloads: how GPU pods join Volcano, what they request, what they run."""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from config.schema.quantity import quantity_value
from policy.pods import (
    ALLOW_UNCONFINED_ANNOTATION,
    QUEUE_ANNOTATION,
    containers,
    get,
    is_device,
    pod_templates,
    uses_gpus,
)


def _volcano_scheduling(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for path, template in pod_templates(args.props):
        if not uses_gpus(template):
            continue
        if get(template, "spec", "schedulerName") != "volcano":
            report(
                f"{path}: GPU pods must set `schedulerName: volcano` (got {get(template, 'spec', 'schedulerName')!r})",
                None,
            )
        annotations = get(template, "metadata", "annotations") or {}
        if not annotations.get(QUEUE_ANNOTATION):
            report(
                f"{path}: GPU pods must carry the `{QUEUE_ANNOTATION}` annotation on the pod template "
                "(an annotation on the workload object is ignored)",
                None,
            )
        if not get(template, "spec", "priorityClassName"):
            report(f"{path}: GPU pods must name a priorityClassName", None)


gpu_pods_use_volcano = ResourceValidationPolicy(
    name="gpu-pods-use-volcano",
    description="GPU pods are scheduled by Volcano, in a queue, with a priority class.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_volcano_scheduling,
)


def _same(a: object, b: object) -> bool:
    try:
        return quantity_value(str(a)) == quantity_value(str(b))
    except (ValueError, TypeError):
        return a == b


def _requests_equal_limits(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for path, template in pod_templates(args.props):
        if not uses_gpus(template):
            continue
        for container in containers(template):
            name = container.get("name", "?")
            requests = get(container, "resources", "requests") or {}
            limits = get(container, "resources", "limits") or {}
            wanted = {"cpu", "memory"} | {r for r in (*requests, *limits) if is_device(str(r))}
            for resource in sorted(wanted):
                if resource not in requests:
                    report(
                        f"{path} container {name}: `{resource}` has no request; gangs and queue "
                        "quotas count requests only",
                        None,
                    )
                elif resource not in limits:
                    report(f"{path} container {name}: `{resource}` has no limit; set it equal to the request", None)
                elif not _same(requests[resource], limits[resource]):
                    report(
                        f"{path} container {name}: `{resource}` request {requests[resource]} != limit "
                        f"{limits[resource]}",
                        None,
                    )


gpu_requests_equal_limits = ResourceValidationPolicy(
    name="gpu-requests-equal-limits",
    description="GPU, RDMA, cpu and memory requests of GPU pods are set and equal their limits.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_requests_equal_limits,
)


def _pinned(image: str) -> bool:
    if "@" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and not last.endswith(":latest")


def _pinned_images(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for path, template in pod_templates(args.props):
        for container in containers(template):
            image = container.get("image")
            if isinstance(image, str) and not _pinned(image):
                report(
                    f"{path} container {container.get('name', '?')}: image `{image}` is not pinned "
                    "(no tag, or `latest`); pin a version tag or a digest",
                    None,
                )


pinned_images = ResourceValidationPolicy(
    name="pinned-images",
    description="Images carry a version tag or digest, never `latest` or nothing.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_pinned_images,
)


def _no_privileged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for path, template in pod_templates(args.props):
        for container in containers(template):
            if get(container, "securityContext", "privileged") is True:
                report(
                    f"{path} container {container.get('name', '?')} is privileged; grant the "
                    "capabilities it needs (e.g. IPC_LOCK) instead",
                    None,
                )


no_privileged_containers = ResourceValidationPolicy(
    name="no-privileged-containers",
    description="No container runs privileged.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_no_privileged,
)


def _seccomp(args: ResourceValidationArgs, report: ReportViolation) -> None:
    allowed = (get(args.props, "metadata", "annotations") or {}).get(ALLOW_UNCONFINED_ANNOTATION) == "true"
    if allowed:
        return
    for path, template in pod_templates(args.props):
        profiles = [get(template, "spec", "securityContext", "seccompProfile", "type")]
        profiles += [get(c, "securityContext", "seccompProfile", "type") for c in containers(template)]
        if "Unconfined" in profiles:
            report(
                f'{path}: seccomp `Unconfined` without `{ALLOW_UNCONFINED_ANNOTATION}: "true"` on the '
                "workload; use RuntimeDefault unless a runtime needs it",
                None,
            )


seccomp_unconfined_allowed_only = ResourceValidationPolicy(
    name="seccomp-unconfined-explicit",
    description="seccomp Unconfined only where the workload explicitly allows it.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_seccomp,
)

POLICIES = [
    gpu_pods_use_volcano,
    gpu_requests_equal_limits,
    pinned_images,
    no_privileged_containers,
    seccomp_unconfined_allowed_only,
]
