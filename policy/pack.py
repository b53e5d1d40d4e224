"""Every policy of the pack, in one list (used by `__main__` and by the offline runner)."""

from __future__ import annotations

from pulumi_policy import Policy

from policy import scheduling, workloads

NAME = "volcano-platform"
POLICIES: list[Policy] = [
    *workloads.POLICIES,
    *scheduling.RESOURCE_POLICIES,
    *scheduling.STACK_POLICIES,
]
