"""The changes in Volcano's scheduling code between the releases `whatif --upgrade` can compare that
move a verdict of the kind the what-if gives, read at the tags in volcano-sh/volcano
(`git log v1.14.1..v1.15.1 -- pkg/scheduler`; v1.14.1 is 49b8f40b, v1.15.0 8fc394c1, v1.15.1
0a56ed33).

The upgrade what-if's verdicts come from running each release's own code, not from this list; the
list says which change can explain a verdict that moved. Each change names the releases whose code
behaves as it describes, so a change and its later fix (the GPU in-queue regression of v1.15.0)
read the same way in either direction, and the kinds of verdict it can move (`touches`): it is a
likely cause of a model's change when the model shows all of them (`upgrade.traits`).
"""

from __future__ import annotations

from dataclasses import dataclass

ENQUEUE = "enqueue"
"""A PodGroup admitted (Inqueue) or held Pending by its queue's share."""
RECLAIM = "reclaim"
PREEMPT = "preempt"
SOFT_TOPOLOGY = "soft-topology"
HARD_TOPOLOGY = "hard-topology"
HIERARCHY = "hierarchy"
"""Queues with parents (the capacity plugin's hierarchy)."""
NODE_ORDER = "node-order"
"""Which of the nodes that fit a pod gets it."""
ALLOCATE = "allocate"
"""Whether an admitted PodGroup's pods are placed."""


@dataclass(frozen=True)
class SchedulingChange:
    commit: str
    pull: str
    where: str
    """The upstream file and function."""
    behaves: frozenset[str]
    """The releases whose code does what `what` says."""
    what: str
    touches: frozenset[str]

    def between(self, running: str, target: str) -> bool:
        """Whether one of the two releases behaves this way and the other does not."""
        return (running in self.behaves) != (target in self.behaves)

    @property
    def citation(self) -> str:
        return f"{self.where} (volcano-sh/volcano {self.commit}, {self.pull})"


V115 = frozenset({"v1.15.0", "v1.15.1"})

CHANGES: tuple[SchedulingChange, ...] = (
    SchedulingChange(
        "e945225f3",
        "#5499",
        "pkg/scheduler/plugins/util/util.go, GetInqueueResource",
        frozenset({"v1.15.0"}),
        "a queue's in-queue share, rebuilt each cycle, counts an admitted gang's GPUs (any scalar "
        "resource) in whole units instead of milli-units, so a gang waiting for nodes holds almost none "
        "of its queue's capability and the queue admits other gangs past it",
        frozenset({ENQUEUE}),
    ),
    SchedulingChange(
        "f28e22fbc",
        "#5053",
        "pkg/scheduler/plugins/capacity/capacity.go, AddPreemptiveFn",
        V115,
        "a queue reclaims only while its allocation plus the request stays within its capability; "
        "before, any requested resource under its deserved share let it reclaim",
        frozenset({RECLAIM}),
    ),
    SchedulingChange(
        "1733c8853",
        "#5206",
        "pkg/scheduler/framework/session.go, adjustNetworkTopologySpec",
        V115,
        "a gang with a soft network topology is placed as a hard one allowed up to the cluster's top tier: "
        "the whole gang in the smallest domain that holds it; before, pod by pod on the best-scored nodes",
        frozenset({SOFT_TOPOLOGY, NODE_ORDER}),
    ),
    SchedulingChange(
        "95b765350",
        "#4973",
        "pkg/scheduler/plugins/capacity/capacity.go, buildHierarchicalQueueAttrs",
        V115,
        "with queue hierarchy, the root queue's capability is unlimited unless set, where it was the "
        "cluster's total, so enqueue admits PodGroups that wait for nodes instead of holding them Pending",
        frozenset({HIERARCHY, ENQUEUE}),
    ),
    SchedulingChange(
        "7910fbd6f",
        "#5141, #5142",
        "pkg/scheduler/actions/preempt/preempt.go, Execute",
        V115,
        "preempt visits queues in the queue order and keeps each queue's starving jobs; before, it "
        "visited them in random order and could drop a starving job of a queue visited later, so the "
        "preemption happened in some cycles only",
        frozenset({PREEMPT}),
    ),
    SchedulingChange(
        "0b82db775",
        "#5130",
        "pkg/scheduler/plugins/capacity/capacity.go, buildQueueAttrs",
        V115,
        "an admitted PodGroup whose pods are already placed no longer counts its minimum resources twice "
        "in its queue's share, so the queue admits more",
        frozenset({ENQUEUE}),
    ),
    SchedulingChange(
        "2c8c641be",
        "#5250",
        "pkg/scheduler/actions/allocate/allocate.go, allocateResourcesForTasks",
        V115,
        "a hard-topology gang's pod nominated to a node outside the domain being tried is placed inside "
        "it; before, the nomination could put the gang across domains",
        frozenset({HARD_TOPOLOGY, NODE_ORDER}),
    ),
    SchedulingChange(
        "4da95f69a",
        "#5562",
        "pkg/scheduler/plugins/nodeorder/nodeorder.go, BatchNodeOrderFn",
        frozenset({"v1.15.1"}),
        "node affinity and the allocation scores are normalised to 0-100 like Kubernetes' own scheduler, "
        "so a preferred node affinity (and spread) weighs against binpack as it does there",
        frozenset({NODE_ORDER}),
    ),
    SchedulingChange(
        "6038edacf",
        "#5528",
        "pkg/scheduler/actions/allocate/allocate.go, allocateResourcesForTasks",
        frozenset({"v1.15.1"}),
        "a pod whose pre-filter fails no longer stops the allocation of its PodGroup's other pods when "
        "the group needs fewer than all of them",
        frozenset({ALLOCATE}),
    ),
)


def changes_between(running: str, target: str) -> list[SchedulingChange]:
    return [change for change in CHANGES if change.between(running, target)]
