"""A gang: one replica of a model as Volcano schedules it, all of its pods or none.

A single-node model's replica is one pod; a multi-node model's is one LeaderWorkerSet group, a pod
per node. Its requests are what the PodGroup reserves (`minMember`, `minResources`), what a queue's
capability must hold, what placement fits into one network domain and what eviction must free;
every one of those reads them from here, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from config.schema.quantity import format_amount, quantity_value


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
        return {resource: format_amount(amount) for resource, amount in self.requests().items()}
