"""Resource names must be ones the cluster's nodes offer.

A queue capability on `nvidia.com/gpus` (a typo of `nvidia.com/gpu`) limits nothing, and a pod
requesting a resource no node offers stays Pending forever. Names are checked against the cluster's
accelerator, the standard resources and `cluster.extendedResources`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from config.errors import Problem, join_path
from config.spec import PlatformSpec

STANDARD_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
_HUGEPAGES = re.compile(r"^hugepages-\d+(Ki|Mi|Gi)$")
# What a component's own requests and limits can name.
COMPONENT_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def known_resources(spec: PlatformSpec) -> list[str]:
    return [*STANDARD_RESOURCES, spec.gpu_resource, *spec.config.cluster.extended_resources]


def _named(spec: PlatformSpec) -> Iterator[tuple[str, str, str]]:
    """(key path, resource name, what names it) for every resource name in the config."""
    config = spec.config
    for tenant, tenant_config in config.tenants.items():
        queue = tenant_config.queue
        for field, quotas in (
            ("capability", queue.capability),
            ("deserved", queue.deserved),
            ("guarantee", queue.guarantee),
        ):
            for name in quotas:
                yield join_path("tenants", tenant, "queue", field, name), name, "quota"
    if config.default_queue is not None and config.default_queue.capability:
        for name in config.default_queue.capability:
            yield join_path("defaultQueue", "capability", name), name, "quota"
    for model, model_config in config.models.items():
        resources = model_config.resources
        if resources.gpu_resource is not None:
            yield join_path("models", model, "resources", "gpuResource"), resources.gpu_resource, "accelerator"
        for name in resources.devices:
            yield join_path("models", model, "resources", "devices", name), name, "device"
    for name in config.volcano.scheduler.binpack.resources:
        yield join_path("volcano", "scheduler", "binpack", "resources", name), name, "device"


def _unknown(name: str, allowed: list[str], path: str, what: str) -> Problem:
    lowered = {a.lower(): a for a in allowed}
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.75) or (
        [lowered[name.lower()]] if name.lower() in lowered else []
    )
    hint = f"did you mean `{close[0]}`? " if close else ""
    return Problem(
        path,
        f"`{name}` is not a resource the cluster's nodes offer, so a {what} on it "
        + ("limits nothing" if what == "quota" else "can never be satisfied (the pods stay Pending)"),
        f"{hint}use one of: {', '.join(allowed)}, or declare it under `cluster.extendedResources`",
        got=name,
    )


def check_resource_names(spec: PlatformSpec) -> list[Problem]:
    allowed = known_resources(spec)
    extended = [spec.gpu_resource, *spec.config.cluster.extended_resources]
    problems: list[Problem] = []
    for path, name, what in _named(spec):
        if what == "quota" and (name in allowed or _HUGEPAGES.match(name)):
            continue
        if what == "accelerator" and name in extended:
            continue
        if what == "device":
            if name == spec.gpu_resource and path.startswith("models"):
                problems.append(
                    Problem(
                        path,
                        f"`{name}` is the accelerator; as a device it would be requested twice",
                        "set `resources.gpus` instead",
                        got=name,
                    )
                )
                continue
            if name in extended:
                continue
        problems.append(_unknown(name, extended if what != "quota" else allowed, path, what))
    for component in ("scheduler", "controller", "admission"):
        requirements = getattr(spec.config.volcano.resources, component)
        if requirements is None:
            continue
        for field in ("requests", "limits"):
            for name in getattr(requirements, field):
                if name not in COMPONENT_RESOURCES and not _HUGEPAGES.match(name):
                    problems.append(
                        Problem(
                            join_path("volcano", "resources", component, field, name),
                            f"`{name}` is not a resource a Volcano component uses",
                            "use cpu, memory or ephemeral-storage",
                            got=name,
                        )
                    )
    return problems
