"""A gang: one replica of a model as Volcano schedules it, all of its pods or none.

A single-node model's replica is one pod; a multi-node model's is one LeaderWorkerSet group, a pod
per node. Its requests are what the PodGroup reserves (`minMember`, `minResources`), what a queue's
capability must hold, what placement fits into one network domain and what eviction must free;
every one of those reads them from here, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from config.schema.quantity import canonical_quantity, quantity_value


@dataclass(frozen=True)
class Gang:
    pods: int
    """Pods that start together (PodGroup `minMember`)."""
    pod_requests: Mapping[str, str]
    """Requests (= limits) of one pod, resource -> quantity text as the stack writes it."""

    def pod_amounts(self) -> dict[str, Decimal]:
        """Requests of one pod as numbers (cores, bytes, devices)."""
        return {resource: quantity_value(text) for resource, text in self.pod_requests.items()}

    def requests(self) -> dict[str, Decimal]:
        """Requests of the whole gang, per resource."""
        return {resource: amount * self.pods for resource, amount in self.pod_amounts().items()}

    def requests_text(self) -> dict[str, str]:
        """The gang's requests as quantities (PodGroup `minResources`)."""
        return {resource: canonical_quantity(amount) for resource, amount in self.requests().items()}


@dataclass(frozen=True)
class RoleGang:
    """One role of a prefill/decode slice as Volcano schedules it: a sub-group of the slice's
    PodGroup whose instances (LWS groups) each start whole, at least `min_instances` of them
    before the slice runs."""

    role: str
    """`prefill` or `decode`: the sub-group's policy name."""
    instance: Gang
    """One instance: its pods (`subGroupSize`) and their requests."""
    min_instances: int
    """Instances the slice needs to run (`minSubGroups`)."""
    max_instances: int
    """The most instances it may run (its autoscaler's maximum)."""
    highest_tier: int | None
    """The tier each instance stays inside (the role's `topology`), None when unconstrained."""
    mode: str | None
    """`hard` or `soft` (the role's `topology.mode`), None when unconstrained."""


@dataclass(frozen=True)
class SliceGang:
    """One slice of a prefill/decode model: one PodGroup holding a sub-group per role."""

    roles: tuple[RoleGang, ...]

    def min_requests(self) -> dict[str, Decimal]:
        """What the slice needs to run: each role's minimum instances (PodGroup `minResources`)."""
        return _summed((role.instance, role.min_instances) for role in self.roles)

    def max_requests(self) -> dict[str, Decimal]:
        """What the slice holds at its peak: each role's maximum instances."""
        return _summed((role.instance, role.max_instances) for role in self.roles)

    @property
    def max_pods(self) -> int:
        """Pods of the slice at its peak."""
        return sum(role.max_instances * role.instance.pods for role in self.roles)

    @property
    def min_member(self) -> int:
        """Pods the slice needs to run (`minMember`): Σ minSubGroups × subGroupSize."""
        return sum(role.min_instances * role.instance.pods for role in self.roles)


def _summed(parts: Iterable[tuple[Gang, int]]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for gang, count in parts:
        for resource, amount in gang.requests().items():
            total[resource] = total.get(resource, Decimal(0)) + amount * count
    return total
