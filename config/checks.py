"""The cross-checks that run on a resolved spec before anything is registered.

A check is a function from `PlatformSpec` to problems (errors and warnings). To add one, write it
next to the concept it guards and list it here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from config.errors import Problem
from config.feasibility import check_queue_capacity
from config.image_rules import check_images
from config.install_rules import check_installs
from config.model_rules import check_models, check_registries
from config.naming_rules import check_names
from config.observability_rules import check_observability
from config.priority_rules import check_priority_classes
from config.queue_rules import check_queues
from config.resource_rules import check_resource_names
from config.scheduler_rules import check_scheduler
from config.secret_refs import check_secret_names
from config.security_rules import check_pod_security
from config.spec import PlatformSpec
from config.upstream_rules import check_upstream_versions

Check = Callable[[PlatformSpec], Iterable[Problem]]

CHECKS: tuple[Check, ...] = (
    check_upstream_versions,
    check_images,
    check_installs,
    check_names,
    check_priority_classes,
    check_queues,
    check_scheduler,
    check_models,
    check_resource_names,
    check_pod_security,
    check_registries,
    check_secret_names,
    check_queue_capacity,
    check_observability,
)


def run_checks(spec: PlatformSpec) -> list[Problem]:
    return [problem for check in CHECKS for problem in check(spec)]
