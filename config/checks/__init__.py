"""The cross-checks that run on a resolved spec before anything is registered.

A check is a function from `PlatformSpec` to problems (errors and warnings). To add one, write it
next to the concept it guards and list it here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from config.checks.charts import check_charts
from config.checks.credentials import check_plain_credentials, check_registries, check_secret_names
from config.checks.eviction import check_eviction, check_priority_classes
from config.checks.gateway import check_gateway
from config.checks.installs import check_images, check_installs, check_upstream_versions
from config.checks.models import check_models
from config.checks.names import check_names, check_resource_names
from config.checks.network_profiles import check_network_profiles
from config.checks.observability import check_observability
from config.checks.queues import check_queue_capacity, check_queues
from config.checks.scheduler import check_scheduler
from config.checks.security import check_pod_security
from config.checks.tenancy.policy import check_tenant_policy
from config.checks.vllm import check_accelerator
from config.checks.volumes import check_host_paths, check_weight_claims
from config.errors import Problem
from config.spec.platform import PlatformSpec

Check = Callable[[PlatformSpec], Iterable[Problem]]

CHECKS: tuple[Check, ...] = (
    check_upstream_versions,
    check_images,
    check_installs,
    check_charts,
    check_names,
    check_priority_classes,
    check_queues,
    check_scheduler,
    check_eviction,
    check_models,
    check_network_profiles,
    check_resource_names,
    check_pod_security,
    check_tenant_policy,
    check_registries,
    check_secret_names,
    check_plain_credentials,
    check_queue_capacity,
    check_observability,
    check_gateway,
    check_accelerator,
    check_host_paths,
    check_weight_claims,
)


def run_checks(spec: PlatformSpec) -> list[Problem]:
    return [problem for check in CHECKS for problem in check(spec)]
