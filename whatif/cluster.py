"""A session from a cluster as it is (a dump or a live read) and a stack as it would be after
`pulumi up`: the running work from the dump, the queues, priority classes and models from the render.

Each model of the stack gets the pods and PodGroups `pulumi up` makes for it: a Deployment's pods
share one PodGroup per ReplicaSet made by Volcano's controller with `minMember: 1` and the pod's
requests as `minResources` (`pkg/controllers/podgroup/pg_controller_handler.go` `buildPodGroupFromPod`);
a multi-node model's pods join the platform's PodGroup (or, with LWS's own gang scheduling, one
PodGroup per group without topology or priority class). Pods already running with the rendered
requests stay; the rest are new and Pending. Pods outside any PodGroup still hold their nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from config.schema.go_regexp import finds
from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL
from live.cluster_state import ClusterState, StateError
from offline.manifests import Rendered
from whatif.hypernodes import after_up
from whatif.scenario import PREEMPTABLE, HyperNodeCycleError, gang_fields, hypernodes_of, queue_affinity, task_status
from whatif.scheduler.model import BINDING, RUNNING, HyperNode, Job, Node, Queue, Task
from whatif.scheduler.resources import PODS, Resources, add, scheduler_units
from whatif.scheduler.session import Session
from whatif.scheduler.spread import spread_of

CRITICAL = frozenset({"system-cluster-critical", "system-node-critical"})


@dataclass
class ModelJobs:
    model: str
    jobs: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    """The pods the model runs after the change (existing and new)."""


def model_tasks(session: Session, jobs: ModelJobs) -> list[Task]:
    wanted = set(jobs.tasks)
    return [t for u in jobs.jobs if u in session.jobs for t in session.jobs[u].tasks if t.uid in wanted]


def runs(session: Session, jobs: ModelJobs) -> bool:
    """Whether every pod of the model runs (or is bound)."""
    return all(t.status in (RUNNING, BINDING, "Bound") for t in model_tasks(session, jobs))


def pod_request(spec: dict[str, Any]) -> Resources:
    """`GetPodResourceRequest` (volcano v1.15.1 pkg/scheduler/api/pod_info.go): containers and
    sidecars (init containers with `restartPolicy: Always`) summed; each other init container with
    the sidecars started before it, the largest of those if larger; one pod."""
    total: Resources = {}
    for container in spec.get("containers") or []:
        add(total, scheduler_units(((container.get("resources") or {}).get("requests")) or {}))
    sidecars: Resources = {}
    largest_init: Resources = {}
    for container in spec.get("initContainers") or []:
        request = scheduler_units(((container.get("resources") or {}).get("requests")) or {})
        if container.get("restartPolicy") == "Always":
            add(total, request)
            add(sidecars, request)
            running = dict(sidecars)
        else:
            running = dict(request)
            add(running, sidecars)
        for name, amount in running.items():
            largest_init[name] = max(largest_init.get(name, 0.0), amount)
    for name, amount in largest_init.items():
        total[name] = max(total.get(name, 0.0), amount)
    total[PODS] = 1.0
    return total


class PriorityValues(dict[str, int]):
    """Each PriorityClass's value by name, and the classes whose pods never preempt
    (`preemptionPolicy: Never`), with the global default's name (`""` without one)."""

    never: frozenset[str] = frozenset()
    default_class: str = ""


def _priority_classes(state: ClusterState, rendered: Rendered | None = None) -> tuple[PriorityValues, int]:
    """Each class's value (the stack's over the dump's) and the global default's (0 without one)."""
    values = PriorityValues()
    default = 0
    never: set[str] = set()
    stack = rendered.by_kind("PriorityClass") if rendered is not None else []
    for obj in [*state.priority_classes, *(o.manifest for o in stack)]:
        name = obj["metadata"]["name"]
        values[name] = int(obj.get("value", 0))
        never.discard(name)
        if obj.get("preemptionPolicy") == "Never":
            never.add(name)
        if obj.get("globalDefault"):
            default = int(obj.get("value", 0))
            values.default_class = name
    values.never = frozenset(never)
    return values, default


def _queue(obj: dict[str, Any], state: str, order: int) -> Queue:
    spec = obj.get("spec") or {}
    return Queue(
        obj["metadata"]["name"],
        weight=int(spec.get("weight") or 1),  # 0 or unset is 1: pkg/webhooks/admission/queues/mutate/mutate_queue.go
        capability=scheduler_units(spec.get("capability") or {}),
        deserved=scheduler_units(spec.get("deserved") or {}),
        guarantee=scheduler_units((spec.get("guarantee") or {}).get("resource") or {}),
        state=state,
        reclaimable=spec.get("reclaimable", True) is not False,
        priority=int(spec.get("priority") or 0),
        parent=spec.get("parent") if spec.get("parent") not in (None, "") else None,
        order=order,
        affinity=queue_affinity(spec),
    )


def _namespaced(obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{metadata.get('namespace', 'default')}/{metadata['name']}"


_UIDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "PodGroup": _namespaced,
    "Queue": lambda obj: str(obj["metadata"]["name"]),
    "Pod": lambda obj: str(obj["metadata"].get("uid") or _namespaced(obj)),
}


def by_creation(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of `kind` in the order Volcano falls back to when no plugin orders two of them:
    creation time, then UID (`framework/session_plugins.go` `JobOrderFn` and `QueueOrderFn`,
    `controllers/job/helpers/helpers.go` `CompareTask`). A job's UID is its PodGroup's
    namespace/name and a queue's its name (`cache/event_handlers.go` `getJobID`, `NewQueueInfo`);
    a pod's is its own."""
    uid = _UIDS[kind]
    return sorted(objects, key=lambda o: (str(o["metadata"].get("creationTimestamp") or ""), uid(o)))


def _queues(state: ClusterState, rendered: Rendered) -> dict[str, Queue]:
    live = {q["metadata"]["name"]: q for q in state.queues}
    queues: dict[str, Queue] = {}
    for order, obj in enumerate(by_creation(state.queues, "Queue")):
        queues[obj["metadata"]["name"]] = _queue(obj, (obj.get("status") or {}).get("state", "Open"), order)
    for order, rendered_queue in enumerate(rendered.by_kind("Queue")):
        name = rendered_queue.name
        current = (live.get(name, {}).get("status") or {}).get("state", "Open")
        queues[name] = _queue(rendered_queue.manifest, current, len(state.queues) + order)
    queues.setdefault("default", Queue("default", order=-1))
    return queues


def with_stack_labels(state: ClusterState, rendered: Rendered) -> ClusterState:
    """The state with the labels the stack's node patches set (`components/scheduling/topology.py`).
    Before the first `up`, or when a change moves a node into a domain, the live node lacks its tier
    labels, and a leaf HyperNode selects its nodes by that label: without them the leaves would
    look empty and every job held inside one would wait."""
    patched = {
        o.name: o.manifest["metadata"].get("labels") or {} for o in rendered.objects if o.patch and o.kind == "Node"
    }
    if not patched:
        return state
    nodes = []
    for node in state.nodes:
        metadata = node.get("metadata") or {}
        labels = patched.get(metadata.get("name", ""))
        if labels:
            node = {**node, "metadata": {**metadata, "labels": {**(metadata.get("labels") or {}), **labels}}}
        nodes.append(node)
    return replace(state, nodes=nodes)


def _nodes(state: ClusterState) -> dict[str, Node]:
    nodes = {}
    for obj in state.nodes:
        metadata, spec = obj["metadata"], obj.get("spec") or {}
        status = obj.get("status") or {}
        nodes[metadata["name"]] = Node(
            metadata["name"],
            scheduler_units(status.get("allocatable") or status.get("capacity") or {}),
            dict(metadata.get("labels") or {}),
            list(spec.get("taints") or []),
            bool(spec.get("unschedulable")),
        )
    return nodes


def dump_hypernodes(state: ClusterState, nodes: dict[str, Node]) -> dict[str, HyperNode]:
    """The dump's HyperNodes, members given by regex (RE2, unanchored, as Volcano's Go code finds
    them) or label resolved against its nodes."""
    by_label: dict[tuple[str, str], set[str]] = {}
    for node in nodes.values():
        for pair in node.labels.items():
            by_label.setdefault(pair, set()).add(node.name)
    order = {name: index for index, name in enumerate(nodes)}
    items = []
    for obj in state.hyper_nodes:
        members = []
        for member in (obj.get("spec") or {}).get("members") or []:
            selector = member.get("selector") or {}
            exact = (selector.get("exactMatch") or {}).get("name")
            if exact:
                members.append({"type": member.get("type", "Node"), "name": exact})
            elif "regexMatch" in selector or "labelMatch" in selector:
                pattern = (selector.get("regexMatch") or {}).get("pattern")
                labels = (selector.get("labelMatch") or {}).get("matchLabels") or {}
                found = {name for name in nodes if finds(pattern, name)} if pattern else set()
                if labels:
                    found |= set.intersection(*(by_label.get(pair, set()) for pair in labels.items()))
                members.extend({"type": "Node", "name": name} for name in sorted(found, key=order.__getitem__))
        spec_ = obj.get("spec") or {}
        items.append(
            {
                "name": obj["metadata"]["name"],
                "tier": int(spec_.get("tier") or 0),
                "tierName": spec_.get("tierName", ""),
                "members": members,
            }
        )
    try:
        return hypernodes_of(items)
    except HyperNodeCycleError as cycle:
        raise StateError(f"{state.source}: {cycle}; remove the member that closes it") from None


def _hypernodes(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, nodes: dict[str, Node]
) -> dict[str, HyperNode]:
    """The HyperNodes after `pulumi up` (`whatif.hypernodes.after_up`) resolved against the nodes as
    the scheduler resolves them."""
    merged = after_up(state, spec, rendered, ((name, node.labels) for name, node in nodes.items()))
    return dump_hypernodes(replace(state, hyper_nodes=merged), nodes)


def node_affinity(spec: dict[str, Any]) -> tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...]:
    """A pod's required node-affinity terms (match expressions only; `matchFields` selects nodes
    by name, which no stack writes). Parts of another shape than Kubernetes' are left out."""
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, dict) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    out = []
    for term in terms if isinstance(terms, list) else ():
        expressions = term.get("matchExpressions") if isinstance(term, dict) else None
        out.append(
            tuple(
                (str(e.get("key")), str(e.get("operator")), tuple(str(v) for v in e.get("values") or ()))
                for e in (expressions if isinstance(expressions, list) else ())
                if isinstance(e, dict) and isinstance(e.get("values") or [], list)
            )
        )
    return tuple(out)


def _task(pod: dict[str, Any], job: str, priorities: dict[str, int], default: int, order: int) -> Task:
    metadata, spec = pod["metadata"], pod.get("spec") or {}
    labels = dict(metadata.get("labels") or {})
    annotations = metadata.get("annotations") or {}
    node = spec.get("nodeName") or ""
    phase = (pod.get("status") or {}).get("phase", "Pending")
    priority = spec.get("priority")
    if priority is None:
        priority = priorities.get(str(spec.get("priorityClassName")), default) if spec.get("priorityClassName") else 1
    flag = annotations.get(PREEMPTABLE, labels.get(PREEMPTABLE, "true"))
    return Task(
        f"{metadata.get('namespace', 'default')}/{metadata['name']}",
        job,
        pod_request(spec),
        status="Releasing" if metadata.get("deletionTimestamp") and phase == "Running" else task_status(phase, node),
        node=node,
        priority=int(priority),
        preemptable=flag == "true",
        preemption_never=spec.get("preemptionPolicy") == "Never",
        node_selector=dict(spec.get("nodeSelector") or {}),
        node_affinity=node_affinity(spec),
        tolerations=list(spec.get("tolerations") or []),
        labels=labels,
        spread=spread_of(spec),
        critical=spec.get("priorityClassName") in CRITICAL or metadata.get("namespace") == "kube-system",
        order=order,
    )


def pod_group_job(obj: dict[str, Any], priorities: dict[str, int], default: int, order: int) -> Job:
    metadata, spec = obj["metadata"], obj.get("spec") or {}
    pc = spec.get("priorityClassName")
    return Job(
        f"{metadata.get('namespace', 'default')}/{metadata['name']}",
        spec.get("queue") or "default",
        int(spec["minMember"] if spec.get("minMember") is not None else 1),
        (obj.get("status") or {}).get("phase", "Pending"),
        priority=priorities.get(str(pc), default) if pc else default,
        order=order,
        **gang_fields(spec, metadata.get("annotations") or {}),
    )


def lws_group(pod: dict[str, Any]) -> tuple[str, str, str] | None:
    """(namespace, LeaderWorkerSet, group index) of a LeaderWorkerSet's pod, else None."""
    metadata = pod["metadata"]
    labels = metadata.get("labels") or {}
    if LWS_NAME_LABEL in labels and LWS_GROUP_INDEX_LABEL in labels:
        return metadata.get("namespace", "default"), labels[LWS_NAME_LABEL], labels[LWS_GROUP_INDEX_LABEL]
    return None


def hold_arrivals(session: Session, pods: dict[str, dict[str, Any]], restarting: set[tuple[str, str, str]]) -> set[str]:
    """Hold back the pods (task uid -> pod) of LeaderWorkerSet groups being made again, and return
    their uids. LWS makes a group's pods only once the rest of it has gone (v0.9.0
    `pkg/controllers/pod_controller.go`, `handleRestartPolicy`, deletes the leader; its StatefulSet
    makes it again, the leader's workers after it) while the scheduler runs every second, so work
    waiting for the room the group held gets there first."""
    held: list[Task | Job] = []
    for job in session.jobs.values() if restarting else ():
        group = [t for t in job.tasks if t.uid in pods and lws_group(pods[t.uid]) in restarting]
        if group:
            job.set_tasks([t for t in job.tasks if t not in group])
            held += group
    if held:
        session.arrivals.append(held)
    return {t.uid for t in held}


def hold_in_waves(session: Session, waves: list[list[str]]) -> list[tuple[list[str], list[str]]]:
    """Hold back whole jobs (uids), each list of `waves` a wave of its own after any already held:
    the jobs of models `pulumi up` creates after others, which reach the scheduler, PodGroups and
    pods, only once it has placed the ones before. Returns each wave's (job uids, task uids)."""
    held: list[tuple[list[str], list[str]]] = []
    for uids in waves:
        wave = [session.jobs.pop(uid) for uid in uids if uid in session.jobs]
        if wave:
            session.arrivals.append(list(wave))
            held.append(([job.uid for job in wave], [t.uid for job in wave for t in job.tasks]))
    return held


def arrive(session: Session) -> bool:
    """Add the next wave of held pods to their jobs, Pending, or the wave's jobs whole; whether
    there was one."""
    if not session.arrivals:
        return False
    for item in session.arrivals.pop(0):
        if isinstance(item, Job):
            session.jobs[item.uid] = item
            continue
        job = session.jobs[item.job]
        job.set_tasks([*job.tasks, item])
    return True


def arrive_all(session: Session) -> None:
    """Every wave still held, as Volcano's outcome has them."""
    while arrive(session):
        pass
