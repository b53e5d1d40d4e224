"""The job, task and node plugins of the policy, each as its `OnSessionOpen` registers it.

priority `pkg/scheduler/plugins/priority/priority.go`; gang `plugins/gang/gang.go`; conformance
`plugins/conformance/conformance.go`; drf `plugins/drf/drf.go` (job share order and its preemptable
test); predicates `plugins/predicates/predicates.go` (node selector, taints, unschedulable nodes,
the pod count); nodeorder `plugins/nodeorder/nodeorder.go` and binpack `plugins/binpack/binpack.go`
(scores); overcommit `plugins/overcommit/overcommit.go` (the enqueue gate on idle resources).
"""

from __future__ import annotations

import math
from typing import Any

from whatif.scheduler.framework import ABSTAIN, PERMIT, REJECT, Plugin, Victims
from whatif.scheduler.model import NODE_GROUP_LABEL, Job, Node, QueueAffinity, Task
from whatif.scheduler.resources import PODS, add, fits_on_requested, plus, total
from whatif.scheduler.spread import spread_scores, spread_violation, term_matches
from whatif.scheduler.subgroups import subgroups_pipelined, subgroups_ready, subgroups_valid

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
TOO_MANY_PODS = "node(s) had too many pods"


class PriorityPlugin(Plugin):
    name = "priority"

    def task_order(self, left: Task, right: Task) -> int:
        return 0 if left.priority == right.priority else (-1 if left.priority > right.priority else 1)

    def job_order(self, left: Job, right: Job) -> int:
        return 0 if left.priority == right.priority else (-1 if left.priority > right.priority else 1)

    def preemptable(self, preemptor: Task, preemptees: list[Task]) -> Victims:
        jobs = self.session.jobs
        mine = jobs[preemptor.job]
        victims = []
        for task in preemptees:
            job = jobs[task.job]
            if job.uid != mine.uid:
                if job.priority < mine.priority:
                    victims.append(task)
            elif task.priority < preemptor.priority:
                victims.append(task)
        return victims, PERMIT

    def unified_evictable(self, kind: str, job: Job, candidates: list[Task]) -> Victims:
        if kind == "gangreclaim":
            return candidates, PERMIT
        jobs = self.session.jobs
        return [t for t in candidates if jobs[t.job].priority < job.priority], PERMIT

    def job_starving(self, job: Job) -> bool:
        return job.ready_num + job.waiting_num < len(job.tasks)


class GangPlugin(Plugin):
    name = "gang"

    def job_valid(self, job: Job) -> str | None:
        if not job.roles_valid():
            return "not enough valid pods of each task for gang-scheduling"
        if not subgroups_valid(job):
            return "not enough valid sub-groups for gang-scheduling"
        if job.valid_num < job.min_member:
            return f"not enough valid tasks for gang-scheduling, valid: {job.valid_num}, min: {job.min_member}"
        return None

    def job_ready(self, job: Job) -> bool:
        return job.roles_ready(False) and subgroups_ready(job, False) and job.is_ready()

    def job_pipelined(self, job: Job) -> int:
        ok = job.roles_ready(True) and subgroups_pipelined(job) and job.is_pipelined()
        return PERMIT if ok else REJECT

    def job_starving(self, job: Job) -> bool:
        return job.is_starving()

    def job_order(self, left: Job, right: Job) -> int:
        lr, rr = left.is_ready(), right.is_ready()
        if lr == rr:
            return 0
        return 1 if lr else -1

    def _surplus(self, preemptor: Task, preemptees: list[Task]) -> Victims:
        occupied: dict[str, int] = {}
        victims = []
        for task in preemptees:
            job = self.session.jobs[task.job]
            occupied.setdefault(job.uid, job.ready_num)
            if occupied[job.uid] > job.min_member:
                occupied[job.uid] -= 1
                victims.append(task)
        return victims, PERMIT

    preemptable = _surplus
    reclaimable = _surplus

    def unified_evictable(self, kind: str, job: Job, candidates: list[Task]) -> Victims:
        return candidates, PERMIT


class ConformancePlugin(Plugin):
    name = "conformance"

    def _evictable(self, tasks: list[Task]) -> Victims:
        return [t for t in tasks if not t.critical], PERMIT

    def preemptable(self, preemptor: Task, preemptees: list[Task]) -> Victims:
        return self._evictable(preemptees)

    def reclaimable(self, reclaimer: Task, reclaimees: list[Task]) -> Victims:
        return self._evictable(reclaimees)

    def unified_evictable(self, kind: str, job: Job, candidates: list[Task]) -> Victims:
        return self._evictable(candidates)


class DrfPlugin(Plugin):
    """Job order by dominant share; its preemptable test is reached only when tier 1 yields none."""

    name = "drf"

    def on_session_open(self) -> None:
        self.total = total(n.allocatable for n in self.session.nodes.values())

    def share(self, allocated: dict[str, float]) -> float:
        return max(
            (allocated.get(name, 0.0) / amount for name, amount in self.total.items() if amount > 0 and name != PODS),
            default=0.0,
        )

    def job_order(self, left: Job, right: Job) -> int:
        ls, rs = self.share(left.allocated), self.share(right.allocated)
        return 0 if ls == rs else (-1 if ls < rs else 1)

    def preemptable(self, preemptor: Task, preemptees: list[Task]) -> Victims:
        jobs = self.session.jobs
        mine = self.share(plus(jobs[preemptor.job].allocated, preemptor.resreq))
        victims = []
        for task in preemptees:
            theirs = self.share(add(jobs[task.job].allocated, task.resreq, -1))
            if mine <= theirs + 1e-6:
                victims.append(task)
        return victims, PERMIT


CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
"""The taint a cordoned node is judged by (`v1.TaintNodeUnschedulable`)."""


def _tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


class PredicatesPlugin(Plugin):
    name = "predicates"

    def predicate(self, task: Task, node: Node) -> str | None:
        # A cordoned node takes a pod that tolerates the cordon's taint (Kubernetes'
        # pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go, which Volcano's
        # predicates plugin runs): a DaemonSet's pods, a drain's replacement that says so.
        if node.unschedulable and not _tolerated(CORDON_TAINT, task.tolerations):
            return "node(s) were unschedulable"
        for key, value in task.node_selector.items():
            if node.labels.get(key) != value:
                return f"node(s) didn't match Pod's node affinity/selector ({key}={value})"
        if task.node_affinity and not any(term_matches(term, node.labels) for term in task.node_affinity):
            return "node(s) didn't match Pod's node affinity/selector"
        for taint in node.taints:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(taint, task.tolerations):
                return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
        if node.max_pods <= len(node.tasks) + node.other_pods:
            return TOO_MANY_PODS
        return spread_violation(self.session, task, node) if task.spread else None


NODE_GROUP_BASE_SCORE = 100


class NodeGroupPlugin(Plugin):
    """`nodegroup` (pkg/scheduler/plugins/nodegroup/nodegroup.go): a node's group is its
    `volcano.sh/nodegroup-name` label. A labelled node takes a task only when its queue's affinity
    names the group (required or preferred) and its required anti-affinity does not, unless its
    preferred anti-affinity does; an unlabelled node only tasks of queues without any affinity, and
    only when not `strict` (the default is strict). Queues without an affinity take their nearest
    ancestor's with `enableHierarchy`. Nodes score 100 for a required group, plus 50 for a
    preferred one (with `enablePreferredOrder`, 50 x (n - i) / n for the i-th of n), and -1 for a
    preferred anti-affinity."""

    name = "nodegroup"

    def on_session_open(self) -> None:
        self.strict = self.arguments.get("strict", True) is not False
        self.ordered = self.arguments.get("enablePreferredOrder", False) is True
        queues = self.session.queues
        self.affinity = {name: queue.affinity for name, queue in queues.items()}
        if self.option.get("enableHierarchy") is True:
            for name in queues:
                if self.affinity[name] is None:
                    self.affinity[name] = self._inherited(name)
        for job in self.session.jobs.values():
            key = repr(self.affinity.get(job.queue))
            for task in job.tasks:
                if task.queue_affinity != key:
                    task.queue_affinity = key
                    task.__dict__.pop("shape", None)  # judged apart from tasks of other affinities

    def _inherited(self, name: str) -> QueueAffinity | None:
        seen: set[str] = set()
        parent = self.session.queues[name].parent or "root"
        while parent not in seen and parent in self.session.queues:
            seen.add(parent)
            if self.session.queues[parent].affinity is not None:
                return self.session.queues[parent].affinity
            if parent == "root":
                break
            parent = self.session.queues[parent].parent or "root"
        return None

    def _of(self, task: Task) -> QueueAffinity | None:
        job = self.session.jobs.get(task.job)
        return self.affinity.get(job.queue) if job is not None else None

    def predicate(self, task: Task, node: Node) -> str | None:
        affinity = self._of(task)
        unset = affinity is None or affinity.unset
        group = node.labels.get(NODE_GROUP_LABEL)
        if group is None:
            return None if not self.strict and unset else "node group label not found"
        if affinity is None or unset:
            return "node group affinity not specified"
        allowed = group in affinity.required or group in affinity.preferred
        if group in affinity.anti_required:
            allowed = False
        if group in affinity.anti_preferred:
            allowed = True
        return None if allowed else "node does not satisfy the node group affinity"

    def node_score(self, task: Task, node: Node) -> float:
        group = node.labels.get(NODE_GROUP_LABEL)
        affinity = self._of(task)
        if group is None or affinity is None:
            return 0.0
        score = float(NODE_GROUP_BASE_SCORE) if group in affinity.required else 0.0
        if group in affinity.preferred:
            count = len(affinity.preferred)
            share = (count - affinity.preferred.index(group)) / count if self.ordered else 1.0
            score += 0.5 * NODE_GROUP_BASE_SCORE * share
        return -1.0 if group in affinity.anti_preferred else score


BALANCED_GPU = "nvidia.com/gpu"
"""The extended resource nodeorder adds to the balanced score (`nodeorder.go` `InitPlugin`)."""


def _requested(node: Node, task: Task, name: str) -> tuple[int, int]:
    """(allocatable, requested with the task) of one resource as the scheduler framework's copy of
    the node holds them, in whole scheduler units: every pod on the node, pipelined ones included
    (k8s `resource_allocation.go` `calculateResourceAllocatableRequest`; volcano
    `framework/util.go` `GenerateNodeMapAndSlice` and the predicates' allocate event handler)."""
    used = node.used.get(name, 0.0) + node.pipelined.get(name, 0.0)
    return int(node.allocatable.get(name, 0.0)), int(used + task.resreq.get(name, 0.0))


class NodeOrderPlugin(Plugin):
    """leastrequested (weight 1), mostrequested (weight 0) and balancedresource (weight 1), the
    scores that differ between nodes in a GPU cluster; the affinity and image scores are not
    modelled. Each score is an integer from 0 to 100 times its weight (`nodeorder.go`
    `InitPlugin` and `BatchNodeOrderFn`); pod topology spread over the candidates (`spread`)."""

    name = "nodeorder"

    def node_score(self, task: Task, node: Node) -> float:
        least = int(self.arguments.get("leastrequested.weight", 1))
        balanced = int(self.arguments.get("balancedresource.weight", 1))
        most = int(self.arguments.get("mostrequested.weight", 0))
        score = 0
        if least or most:
            cpu, memory = _requested(node, task, "cpu"), _requested(node, task, "memory")
            if least:
                score += least * _least_allocated((cpu, memory))
            if most:
                score += most * _most_allocated((cpu, memory))
        if balanced:
            score += balanced * _balanced_allocation(node, task)
        return float(score)

    def batch_node_scores(self, task: Task, nodes: list[Node]) -> dict[str, float]:
        weight = int(self.arguments.get("podtopologyspread.weight", 2))
        return spread_scores(self.session, task, nodes, weight) if task.spread else {}

    def couples_nodes(self, task: Task) -> bool:
        return any(not constraint.required for constraint in task.spread)


def _least_allocated(resources: tuple[tuple[int, int], ...]) -> int:
    """k8s `noderesources/least_allocated.go` `leastResourceScorer` with cpu and memory at equal
    weight: per resource the free share of 100 in integers (0 when over), then their mean."""
    scores = [0 if req > alloc else (alloc - req) * 100 // alloc for alloc, req in resources if alloc]
    return sum(scores) // len(scores) if scores else 0


def _most_allocated(resources: tuple[tuple[int, int], ...]) -> int:
    """k8s `noderesources/most_allocated.go` `mostResourceScorer`: the used share of 100 (capped at
    the whole) in integers, averaged."""
    scores = [min(req, alloc) * 100 // alloc for alloc, req in resources if alloc]
    return sum(scores) // len(scores) if scores else 0


def _balanced_allocation(node: Node, task: Task) -> int:
    """k8s `noderesources/balanced_allocation.go` `balancedResourceScorer` over cpu, memory and
    the GPU, which counts only when the task asks for it and the node has it: 100 times one less
    the standard deviation of the used fractions (each at most 1), truncated."""
    fractions = []
    for name in ("cpu", "memory", BALANCED_GPU):
        if name == BALANCED_GPU and task.resreq.get(name, 0.0) <= 0:
            continue
        alloc, req = _requested(node, task, name)
        if alloc:
            fractions.append(min(1.0, req / alloc))
    deviation = 0.0
    if len(fractions) == 2:
        deviation = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        deviation = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - deviation) * 100)


class BinpackPlugin(Plugin):
    name = "binpack"

    def node_score(self, task: Task, node: Node) -> float:
        weights = {
            "cpu": float(self.arguments.get("binpack.cpu", 1)),
            "memory": float(self.arguments.get("binpack.memory", 1)),
        }
        for name in str(self.arguments.get("binpack.resources", "")).split(","):
            if name.strip():
                weights[name.strip()] = float(self.arguments.get(f"binpack.resources.{name.strip()}", 1))
        score = used = 0.0
        for name, weight in weights.items():
            request = task.resreq.get(name, 0.0)
            if request <= 0 or weight <= 0:
                continue
            allocatable = node.allocatable.get(name, 0.0)
            after = node.used.get(name, 0.0) + request
            if allocatable <= 0 or after > allocatable:
                return 0.0
            score += weight * after / allocatable
            used += weight
        return 100 * score / used * float(self.arguments.get("binpack.weight", 1)) if used else 0.0


class OvercommitPlugin(Plugin):
    name = "overcommit"

    def on_session_open(self) -> None:
        factor = float(self.arguments.get("overcommit-factor", 1.2))
        factor = factor if factor >= 1 else 1.2
        capacity = {k: v * factor for k, v in total(n.allocatable for n in self.session.nodes.values()).items()}
        self.idle = add(capacity, total(n.used for n in self.session.nodes.values()), -1)
        self.inqueue: dict[str, float] = {}
        for job in self.session.jobs.values():
            if job.phase == "Inqueue" and job.min_resources:
                add(self.inqueue, job.min_resources)

    def job_enqueueable(self, job: Job) -> int:
        if not job.min_resources:
            return PERMIT
        return (
            PERMIT if fits_on_requested(plus(self.inqueue, job.min_resources), self.idle, job.min_resources) else REJECT
        )

    def job_enqueued(self, job: Job) -> None:
        if job.min_resources:
            add(self.inqueue, job.min_resources)


class AbstainingPlugin(Plugin):
    """A plugin the model knows but that does not change these decisions (`sla` without waiting
    times, `resourcequota` without quotas)."""

    def job_enqueueable(self, job: Job) -> int:
        return ABSTAIN
