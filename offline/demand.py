"""GPU demand per topology domain from the placement plans, split by constraint mode."""

from __future__ import annotations

from dataclasses import dataclass

from config.spec.platform import PlatformSpec


@dataclass(frozen=True)
class DomainDemand:
    hard: int
    soft: int
    status: str = "ok"
    """The joint plan's verdict: `ok`, `tight` (an autoscaler's peak does not fit) or `short`
    (replicas the stack requires have no room)."""

    @property
    def total(self) -> int:
        return self.hard + self.soft


def domain_demand(spec: PlatformSpec) -> dict[str, DomainDemand]:
    """Domain -> GPUs that hard- and soft-constrained models are planned to use there."""
    hard: dict[str, int] = {}
    soft: dict[str, int] = {}
    for placement in spec.placements.values():
        target = hard if placement.mode == "hard" else soft if placement.mode == "soft" else None
        if target is None:
            continue
        for domain, gpus in placement.planned_gpus.items():
            target[domain] = target.get(domain, 0) + gpus
    if spec.topology is None:
        return {}
    status = spec.domain_status
    return {name: DomainDemand(hard.get(name, 0), soft.get(name, 0), status[name]) for name in spec.topology.domains}
