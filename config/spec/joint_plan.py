"""The joint placement plan: every model's replicas placed at once in the topology, node by node.

Checking each model alone against an empty cluster misses models that fit one by one but not
together (a hard-constrained model filling the leaves another model needed). The plan places every
replica the stack asks to run, most constrained first (hard, lowest tier first; then soft; then
unconstrained), each into the domain that fits it most tightly (best fit, so roomy domains stay
free for the gangs that need them), every pod onto the tightest node. When that greedy pass leaves
replicas out, a search over the domain each replica goes to decides: it finds an arrangement where
everything fits, or shows there is none. Only then is a replica "unplaced"; a search cut off by its
budget says so (`proven` is False), so the plan never calls a domain short on a guess.

A replica's pods share nodes where their GPUs allow, as the scheduler lets them. Pods are packed
best fit, node by node, which is exact when GPUs per pod divide the nodes' GPUs (1, 2, 4, 8 on
8-GPU nodes), as GPU clusters are sized; `tests/config/test_placement.py` checks the plan against an
exhaustive search of every node assignment on generated clusters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from config.spec.free_gpus import CLUSTER, FreeGpus, Moves, State
from config.spec.topology import Domain, Topology

Mode = Literal["hard", "soft", "any"]
SEARCH_BUDGET = 20_000
"""Search positions tried before giving up on proving a shortage (the greedy pass places real
clusters' stacks; the search runs only when it leaves replicas out)."""


@dataclass(frozen=True)
class Demand:
    """One model as the plan sees it."""

    model: str
    mode: Mode
    tier: int | None
    """Hard: the highest tier one replica may span. Soft: the tier it prefers to stay within."""
    pods: int
    """Pods per replica (one gang)."""
    gpus: int
    """GPUs per pod."""
    required: int
    """Replicas that must run at once: `replicas`, or `autoscaling.minReplicas`."""
    peak: int
    """The most it may run: `autoscaling.maxReplicas`, else `required`."""
    pools: tuple[str, ...] | None = None
    """The node pools it may run on (None: any node)."""


@dataclass
class JointPlan:
    gpus: dict[str, Counter[str]] = field(default_factory=dict)
    """Model -> domain -> GPUs placed there (leaves and their ancestors)."""
    domains: dict[str, list[str]] = field(default_factory=dict)
    """Model -> the domain each placed replica went into (`CLUSTER` when it spans the top tier)."""
    unplaced: Counter[str] = field(default_factory=Counter)
    """Model -> required replicas the plan could not place."""
    unplaced_peak: Counter[str] = field(default_factory=Counter)
    """Model -> replicas between required and peak it could not place."""
    proven: bool = True
    """False when the search was cut off: the unplaced replicas might fit in another arrangement."""


@dataclass(frozen=True)
class Placement:
    """Where a model's replicas go, as the joint plan places them."""

    model: str
    mode: Mode
    """`hard`, `soft` or `any` (no constraint)."""
    tier: int | None
    """Hard: the allowed tier. Soft: the highest tier the plan had to use. None: the whole cluster."""
    replicas: int
    """The most replicas it may run (`maxReplicas` under an autoscaler)."""
    replicas_that_fit: int
    """Replicas that fit the empty cluster where they may go, with nothing else placed."""
    planned_gpus: dict[str, int] = field(default_factory=dict)
    """Domain name -> GPUs the joint plan puts there (leaves and their ancestors)."""
    unplaced: int = 0
    """Replicas the stack requires (`replicas`, or `minReplicas`) that found no room."""
    unplaced_peak: int = 0
    """Replicas between the required and the peak count that found no room."""
    shortage_proven: bool = True
    """False when the plan's search was cut off: `unplaced` replicas might fit another way."""
    domains: tuple[str, ...] = ()
    """The domain each placed replica (or slice) went into, in order (`""`: the whole cluster)."""

    @property
    def fits(self) -> bool:
        return self.replicas_that_fit >= self.replicas and not self.unplaced and not self.unplaced_peak


def _order(demands: Sequence[Demand]) -> list[Demand]:
    rank = {"hard": 0, "soft": 1, "any": 2}
    return sorted(demands, key=lambda d: (rank[d.mode], d.tier or 0, -d.pods * d.gpus, d.model))


def _levels(demand: Demand, topology: Topology) -> list[list[str]]:
    """Candidate domains, in the order the plan tries them: one level per tier for soft models
    (tier 1 first, then the whole cluster), the allowed tier for hard ones, the cluster otherwise."""
    anywhere = _anywhere(demand, topology)
    if demand.mode == "hard" and demand.tier is not None:
        return [_in_pools(demand, topology.at_tier(demand.tier))]
    if demand.mode == "soft":
        tiers = [_in_pools(demand, topology.at_tier(t)) for t in range(1, topology.top_tier + 1)]
        return [*tiers, anywhere]
    return [anywhere]


def _in_pools(demand: Demand, domains: Sequence[Domain]) -> list[str]:
    if demand.pools is None:
        return [d.name for d in domains]
    return [d.name for d in domains if d.pool in demand.pools]


def _anywhere(demand: Demand, topology: Topology) -> list[str]:
    """Where a replica may span domains: the whole cluster, or each of its pools on its own (a gang
    is counted inside one pool, which never promises room two pools would only give together)."""
    if demand.pools is None or not topology.pools:
        return [CLUSTER]
    return [d.name for d in topology.pool_roots(demand.pools)]


def _fitting(free: FreeGpus, demand: Demand, level: list[str]) -> list[str]:
    """The domains of a level that hold one replica now, tightest first."""
    fits = [(free.slots(name, demand.gpus), index, name) for index, name in enumerate(level)]
    return [name for slots, _, name in sorted(fits) if slots >= demand.pods]


def _tightest(free: FreeGpus, demand: Demand, level: list[str]) -> str | None:
    """The domain of a level that holds one replica now with the least room to spare."""
    best: tuple[int, str] | None = None
    for name in level:
        slots = free.slots(name, demand.gpus)
        if slots >= demand.pods and (best is None or slots < best[0]):
            best = (slots, name)
    return best[1] if best else None


def _place_one(free: FreeGpus, demand: Demand, topology: Topology) -> tuple[str, Counter[str]] | None:
    for level in _levels(demand, topology):
        name = _tightest(free, demand, level)
        if name is not None:
            taken = free.take(name, demand.pods, demand.gpus)
            if taken is not None:
                return name, taken
    return None


def _record(plan: JointPlan, free: FreeGpus, demand: Demand, domain: str, taken: Counter[str]) -> None:
    plan.domains.setdefault(demand.model, []).append(domain)
    gpus = plan.gpus.setdefault(demand.model, Counter())
    for leaf, count in taken.items():
        for name in free.ancestors(leaf):
            gpus[name] += count


def _replicas(demands: Sequence[Demand], peak: bool) -> list[Demand]:
    """One entry per replica to place: the required ones, or those between required and peak."""
    return [d for d in demands for _ in range((d.peak - d.required) if peak else d.required)]


def _search(
    replicas: list[Demand], free: FreeGpus, topology: Topology
) -> tuple[list[tuple[str, Counter[str]]] | None, bool]:
    """Every replica placed somewhere it may go, trying each fitting domain in turn (depth first,
    undoing a placement to try the next, remembering positions known to fail); (the placements,
    True), (None, True) when no arrangement exists, (None, False) when the budget ran out."""
    # Remembering a position costs the number of leaves; the budget keeps the whole search to a few
    # million steps, so a cluster of thousands of leaves is searched less deeply, never slowly.
    budget = min(SEARCH_BUDGET, 2_000_000 // (len(free.state()) + 1))
    failed: set[tuple[int, State]] = set()
    placed: list[tuple[str, Counter[str], Moves]] = []

    def options(index: int) -> Iterator[str]:
        return iter(
            [name for level in _levels(replicas[index], topology) for name in _fitting(free, replicas[index], level)]
        )

    pending: list[Iterator[str]] = [options(0)] if replicas else []
    while len(placed) < len(replicas):
        index = len(placed)
        name = next(pending[-1], None)
        if name is None:
            failed.add((index, free.state()))
            pending.pop()
            if not placed:
                return None, True
            free.undo(placed.pop()[2])
            continue
        budget -= 1
        if budget < 0:
            for _, _, moves in reversed(placed):
                free.undo(moves)
            return None, False
        result = free.take_undoably(name, replicas[index].pods, replicas[index].gpus)
        if result is None:
            continue
        placed.append((name, *result))
        if (index + 1, free.state()) in failed:
            free.undo(placed.pop()[2])
            continue
        if index + 1 < len(replicas):
            pending.append(options(index + 1))
    found = [(name, taken) for name, taken, _ in placed]
    for _, _, moves in reversed(placed):
        free.undo(moves)
    return found, True


def _too_big(replicas: list[Demand], topology: Topology) -> bool:
    """A shortage that needs no search: for some pod size, the pods of at least that size need more
    GPUs than all the nodes big enough to hold one of them have (such a pod fits no smaller node)."""
    for size in sorted({d.gpus for d in replicas}):
        needed = sum(d.pods * d.gpus for d in replicas if d.gpus >= size)
        room = sum(gpus * count for gpus, count in topology.capacity if gpus >= size)
        if needed > room:
            return True
    return False


@dataclass(frozen=True)
class RoleDemand:
    """One role of a prefill/decode slice: instances of `pods` pods of `gpus` GPUs."""

    role: str
    pods: int
    gpus: int
    tier: int | None
    """The tier each instance stays inside (hard), None: anywhere in the slice's domain."""
    required: int
    """Instances the slice needs (`minSubGroups`)."""
    peak: int
    """The most instances it may run."""


@dataclass(frozen=True)
class SliceDemand:
    """A model with prefill and decode apart: `slices` gangs, each inside one domain of `tier`
    (None: anywhere in its pools), each of its role instances inside a narrower domain."""

    model: str
    tier: int | None
    slices: int
    roles: tuple[RoleDemand, ...]
    pools: tuple[str, ...] | None = None


def plan_jointly(demands: Sequence[Demand], topology: Topology, slices: Sequence[SliceDemand] = ()) -> JointPlan:
    """Slices first at their minimum (the most constrained: nested domains), then every model's
    required replicas, then the slices' and the models' peaks."""
    ordered = _order(demands)
    plan = JointPlan()
    free = FreeGpus(topology)
    slice_domains = _place_slices(plan, free, slices, topology)
    required = _replicas(ordered, peak=False)
    placed: list[tuple[Demand, str, Counter[str]]] = []
    trial = free.copy()
    for demand in required:
        result = _place_one(trial, demand, topology)
        if result is None:
            break
        placed.append((demand, *result))
    else:
        free = trial
    if len(placed) < len(required):
        found, plan.proven = (None, True) if _too_big(required, topology) else _search(required, free, topology)
        if found is not None:
            placed = [(demand, name, taken) for demand, (name, taken) in zip(required, found, strict=True)]
            for demand, name, _ in placed:
                free.take(name, demand.pods, demand.gpus)
        else:
            # No arrangement holds them all: place what the greedy pass can, one replica at a time.
            placed = []
            for demand in required:
                result = _place_one(free, demand, topology)
                if result is None:
                    plan.unplaced[demand.model] += 1
                else:
                    placed.append((demand, *result))
    for demand, name, taken in placed:
        _record(plan, free, demand, name, taken)
    _grow_slices(plan, free, slices, slice_domains, topology)
    for demand in _replicas(ordered, peak=True):
        result = _place_one(free, demand, topology)
        if result is None:
            plan.unplaced_peak[demand.model] += 1
        else:
            _record(plan, free, demand, *result)
    return plan


def _within(topology: Topology, domain: str, tier: int | None) -> list[str]:
    """The domains of `tier` inside `domain` (itself without a tier)."""
    if tier is None:
        return [domain]
    inside = [d.name for d in topology.at_tier(tier)]
    if domain == CLUSTER:
        return inside
    if topology.domains[domain].tier == tier:
        return [domain]
    return [name for name in inside if _under(topology, name, domain)]


def _under(topology: Topology, name: str, ancestor: str) -> bool:
    parent: str | None = name
    while parent:
        if parent == ancestor:
            return True
        parent = topology.domains[parent].parent
    return False


def _place_instances(
    free: FreeGpus, topology: Topology, domain: str, role: RoleDemand, count: int
) -> tuple[Counter[str], Moves] | None:
    """`count` instances of a role inside `domain`, each in the tightest of its tier's domains
    there; (the GPUs taken per leaf, the moves), or None with nothing taken."""
    taken: Counter[str] = Counter()
    moves: Moves = []
    for _ in range(count):
        candidates = [name for name in _within(topology, domain, role.tier) if free.slots(name, role.gpus) >= role.pods]
        result = None
        for name in sorted(candidates, key=lambda n: free.slots(n, role.gpus)):
            result = free.take_undoably(name, role.pods, role.gpus)
            if result is not None:
                break
        if result is None:
            free.undo(moves)
            return None
        taken.update(result[0])
        moves += result[1]
    return taken, moves


def _slice_domains(demand: SliceDemand, topology: Topology) -> list[str]:
    if demand.tier is not None:
        domains = topology.at_tier(demand.tier)
        return [d.name for d in domains if demand.pools is None or d.pool in demand.pools]
    if demand.pools is None or not topology.pools:
        return [CLUSTER]
    return [d.name for d in topology.pool_roots(demand.pools)]


def _place_slices(
    plan: JointPlan, free: FreeGpus, slices: Sequence[SliceDemand], topology: Topology
) -> dict[str, list[str]]:
    """Each slice at its minimum into the tightest domain that holds all of it (larger pods first);
    model -> the domain of each placed slice."""
    placed: dict[str, list[str]] = {}
    for demand in sorted(slices, key=lambda d: (d.tier or topology.top_tier + 1, d.model)):
        roles = sorted(demand.roles, key=lambda r: -r.pods * r.gpus)
        for _ in range(demand.slices):
            biggest = roles[0].gpus if roles else 1
            options = sorted(_slice_domains(demand, topology), key=lambda n: free.slots(n, biggest))
            # A slice grows only inside its own domain: one with room for its peak is taken first.
            roomy = [d for d in options if _take_slice(free, topology, d, roles, peak=True, keep=False)]
            for domain in roomy + [d for d in options if d not in roomy]:
                taken = _take_slice(free, topology, domain, roles, peak=False, keep=True)
                if taken is not None:
                    placed.setdefault(demand.model, []).append(domain)
                    plan.domains.setdefault(demand.model, []).append(domain)
                    _record_taken(plan, free, demand.model, taken)
                    break
            else:
                plan.unplaced[demand.model] += 1
    return placed


def _take_slice(
    free: FreeGpus, topology: Topology, domain: str, roles: Sequence[RoleDemand], peak: bool, keep: bool
) -> Counter[str] | None:
    """Every role's instances (required, or up to the peak) inside `domain`: the GPUs taken per
    leaf (undone unless `keep`), or None with nothing taken."""
    taken: Counter[str] = Counter()
    moves: Moves = []
    for role in roles:
        result = _place_instances(free, topology, domain, role, role.peak if peak else role.required)
        if result is None:
            free.undo(moves)
            return None
        taken.update(result[0])
        moves += result[1]
    if not keep:
        free.undo(moves)
    return taken


def _grow_slices(
    plan: JointPlan,
    free: FreeGpus,
    slices: Sequence[SliceDemand],
    placed: dict[str, list[str]],
    topology: Topology,
) -> None:
    """Each placed slice's roles up to their peak, inside the slice's own domain (Volcano places a
    sub-group's later instances under the HyperNode the job was given); a slice that cannot grow
    counts once in `unplaced_peak`."""
    for demand in slices:
        for domain in placed.get(demand.model, []):
            short = False
            for role in demand.roles:
                result = _place_instances(free, topology, domain, role, role.peak - role.required)
                if result is None:
                    short = True
                    continue
                _record_taken(plan, free, demand.model, result[0])
            if short:
                plan.unplaced_peak[demand.model] += 1


def _record_taken(plan: JointPlan, free: FreeGpus, model: str, taken: Counter[str]) -> None:
    gpus = plan.gpus.setdefault(model, Counter())
    for leaf, count in taken.items():
        for name in free.ancestors(leaf):
            gpus[name] += count
