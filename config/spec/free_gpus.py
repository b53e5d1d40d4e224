"""Free GPUs of every node while a placement plan fills the cluster, kept as histograms per domain.

Each domain, and the whole cluster (`CLUSTER`, the virtual root above the top tier), holds a
histogram: free GPUs -> number of nodes with that many free, over every node in and below it. A pod
of G GPUs goes to a node with the fewest free GPUs that still hold it (best fit), which keeps whole
nodes free for the gangs that need them; taking it moves one node from one bucket to another in its
leaf and in every ancestor, so a placement costs the depth of the tree, not the number of nodes.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from config.spec.topology import Topology

CLUSTER: Final = ""
"""The whole cluster, as a domain (no domain is named with the empty string)."""

Moves = list[tuple[str, int, int]]
"""Nodes moved by a placement: (leaf, free GPUs before, after)."""
State = tuple[tuple[str, tuple[tuple[int, int], ...]], ...]
"""The free GPUs of every leaf, for remembering a search position (ancestors follow from it)."""


class FreeGpus:
    def __init__(self, topology: Topology):
        self._leaves = [d.name for d in topology.domains.values() if d.tier == 1]
        self._parent: dict[str, str | None] = {name: d.parent or CLUSTER for name, d in topology.domains.items()}
        self._parent[CLUSTER] = None
        self._children: dict[str, tuple[str, ...]] = {name: d.children for name, d in topology.domains.items()}
        self._children[CLUSTER] = tuple(d.name for d in topology.roots)
        self._free: dict[str, Counter[int]] = {name: Counter(dict(d.capacity)) for name, d in topology.domains.items()}
        self._free[CLUSTER] = Counter(dict(topology.capacity))
        self._slots: dict[str, dict[int, int]] = {}

    def slots(self, domain: str, gpus: int) -> int:
        """Pods of `gpus` GPUs the domain can take now (several may share a node)."""
        cached = self._slots.setdefault(domain, {})
        if gpus not in cached:
            cached[gpus] = sum(count * (free // gpus) for free, count in self._free[domain].items() if free >= gpus)
        return cached[gpus]

    def take(self, domain: str, pods: int, gpus: int) -> Counter[str] | None:
        """Place `pods` pods of `gpus` GPUs inside `domain`, each on the best-fitting node; the GPUs
        taken per leaf, or None (and nothing taken) when they do not fit."""
        placed = self.take_undoably(domain, pods, gpus)
        return placed[0] if placed is not None else None

    def take_undoably(self, domain: str, pods: int, gpus: int) -> tuple[Counter[str], Moves] | None:
        """`take`, with the moves that `undo` reverses."""
        if gpus <= 0 or self.slots(domain, gpus) < pods:
            return None
        taken: Counter[str] = Counter()
        moves: Moves = []
        for _ in range(pods):
            free = min(f for f, count in self._free[domain].items() if count and f >= gpus)
            leaf = domain
            while self._children.get(leaf):
                leaf = next(child for child in self._children[leaf] if self._free[child][free])
            self._move(leaf, free, free - gpus)
            moves.append((leaf, free, free - gpus))
            taken[leaf] += gpus
        return taken, moves

    def undo(self, moves: Moves) -> None:
        for leaf, old, new in reversed(moves):
            self._move(leaf, new, old)

    def _move(self, leaf: str, old: int, new: int) -> None:
        name: str | None = leaf
        while name is not None:
            histogram = self._free[name]
            histogram[old] -= 1
            if not histogram[old]:
                del histogram[old]
            histogram[new] += 1
            self._slots.pop(name, None)
            name = self._parent[name]

    def ancestors(self, leaf: str) -> list[str]:
        """The leaf and every domain above it (not the cluster)."""
        out: list[str] = []
        name: str | None = leaf
        while name:
            out.append(name)
            name = self._parent[name]
        return out

    def state(self) -> State:
        return tuple((leaf, tuple(sorted(self._free[leaf].items()))) for leaf in self._leaves)

    def copy(self) -> FreeGpus:
        twin = object.__new__(FreeGpus)
        twin._leaves, twin._parent, twin._children = self._leaves, self._parent, self._children
        twin._free = {name: Counter(histogram) for name, histogram in self._free.items()}
        twin._slots = {}
        return twin
