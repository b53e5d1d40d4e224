"""Why a gang does not run, in numbers and stack keys: the queue's limit, the nodes that could hold
its pods, the domains its topology allows, and what eviction may not take."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from offline.markdown import code
from whatif.scheduler.model import ALLOCATED_STATUSES, PENDING, RUNNING, Job, Node, Task
from whatif.scheduler.queues import QueueAttr, QueuePlugin
from whatif.scheduler.resources import PODS, Resources, fits
from whatif.scheduler.session import Session
from whatif.scheduler.topology import ROOT, tier_of
from whatif.volcano_words import translate


@dataclass(frozen=True)
class Reason:
    text: str
    key: str
    """The stack key that would change it."""
    never: bool = False
    volcano: str = ""
    """Volcano's own message the text was made from, where it was."""


def gpus(amount: float) -> str:
    return f"{amount / 1000:g}"


def _queue_attr(session: Session, queue: str) -> tuple[QueueAttr | None, str]:
    for name in ("capacity", "proportion"):
        plugin = session.fw.plugin(name)
        if isinstance(plugin, QueuePlugin):
            return plugin.attrs.get(queue), name
    return None, ""


def capped_capability(session: Session, queue: str, gpu: str) -> float | None:
    """The queue's own capability in milli-GPUs where the capacity plugin lets it use less (its
    `realCapability`: the capability within what the cluster has after the other queues'
    guarantees, plugins/capacity/capacity.go), else None."""
    attr, plugin = _queue_attr(session, queue)
    if attr is None or plugin != "capacity":
        return None
    own = attr.capability.get(gpu)
    real = attr.real_capability.get(gpu)
    return own if own is not None and real is not None and real < own else None


def queue_limit(session: Session, job: Job, gpu: str) -> tuple[str, float, float, float] | None:
    """(queue, allocated, limit, need) in milli-GPUs of the first queue that cannot take the job's
    pending pods: its own, else the nearest ancestor below the root that is full. With hierarchy
    the capacity plugin checks the job's queue and every ancestor (`queueAllocatable`,
    plugins/capacity/capacity.go), so a child with room under a full parent still waits."""
    attr, plugin = _queue_attr(session, job.queue)
    if attr is None:
        return None
    need = sum(t.resreq.get(gpu, 0.0) for t in job.tasks if t.status == PENDING)
    chain = [attr.name, *reversed(attr.ancestors)] if plugin == "capacity" else [attr.name]
    for name in chain:
        queue_attr = _queue_attr(session, name)[0]
        if name == ROOT or queue_attr is None:
            continue
        limit_of = queue_attr.real_capability if plugin == "capacity" else queue_attr.deserved
        limit = limit_of.get(gpu, float("inf"))
        allocated = queue_attr.allocated.get(gpu, 0.0)
        if allocated + need > limit:
            return name, allocated, limit, need
    return None


def enqueue_limit(session: Session, job: Job, gpu: str) -> tuple[str, float, float, float, float] | None:
    """(queue, allocated, held, limit, need) in milli-GPUs where the job's PodGroup is not admitted
    because its queue's share is held: the capacity plugin admits a PodGroup only while its
    `minResources` plus what the queue has allocated and what its admitted PodGroups hold
    (`inqueue`), less their pods beyond their minimum (`elastic`), stay within the queue's
    `realCapability` (`jobEnqueueable`, plugins/capacity/capacity.go)."""
    attr, plugin = _queue_attr(session, job.queue)
    if attr is None or plugin != "capacity" or job.phase not in ("Pending", "") or job.min_resources is None:
        return None
    need = job.min_resources.get(gpu, 0.0)
    allocated, held = attr.allocated.get(gpu, 0.0), attr.inqueue.get(gpu, 0.0)
    limit = attr.real_capability.get(gpu, float("inf"))
    if held > 0 and need + allocated + held - attr.elastic.get(gpu, 0.0) > limit:
        return attr.name, allocated, held, limit, need
    return None


def queue_keys(spec: PlatformSpec) -> dict[str, str]:
    """Each queue's settings by its stack key: `tenants.<t>.queue`, or `...queue.byType.<type>` for
    a queue of one accelerator type."""
    return {tenant.queue_name: tenant.queue_path for tenant in spec.tenants.values()}


def _nodes_taking(session: Session, task: Task, room: Callable[[Node], Resources]) -> set[str]:
    """The nodes whose predicates take the task and whose `room` holds it, judged once per node
    class (nodes the scheduler cannot tell apart)."""
    fw = session.fw
    out: set[str] = set()
    for group in session.classes.values():
        node = next(iter(group.values()))
        if fits(task.resreq, room(node)) and fw.predicate(task, node) is None:
            out.update(group)
    return out


def _shape_nodes(session: Session, task: Task) -> set[str]:
    return _nodes_taking(session, task, lambda node: node.allocatable)


def _free_nodes(session: Session, task: Task) -> set[str]:
    return _nodes_taking(session, task, lambda node: node.idle)


def reason_for(session: Session, job: Job, model: ModelSpec, spec: PlatformSpec, empty: bool) -> Reason:
    """The dominant reason, checked in the order the scheduler meets them."""
    gpu = spec.gpu_resource
    tenant_key = queue_keys(spec).get(job.queue, f"tenants.{model.tenant}.queue")
    queue = session.queues.get(job.queue)
    if queue is None or queue.state != "Open":
        state = queue.state if queue else "missing"
        return Reason(f"queue `{job.queue}` is {state}", tenant_key, never=queue is None)
    pending = [t for t in job.tasks if t.status == PENDING]
    if not pending:
        return Reason("its pods wait for evicted pods to leave", f"models.{model.name}")
    limited = queue_limit(session, job, gpu)
    gang = model.gang.pods * model.gpus_per_pod * 1000
    if limited is not None:
        name, allocated, limit, need = limited
        key = f"{queue_keys(spec).get(name, tenant_key)}.capability"
        which = f"queue `{name}`" + ("" if name == job.queue else f" (above the model's queue `{job.queue}`)")
        if limit < gang:
            return Reason(f"{which} may hold {gpus(limit)} GPUs, less than one gang ({gpus(gang)})", key, never=True)
        if empty:
            return Reason(f"{which} may hold {gpus(limit)} GPUs and the model needs {gpus(need)}", key, never=True)
        admitted = (
            ""
            if session.unschedulable.get(job.uid) != "enqueue"
            else (
                "; its PodGroup is not admitted (Inqueue) until the queue has room, and a PodGroup that is "
                "not admitted neither starts nor preempts"
            )
        )
        own = capped_capability(session, name, gpu)
        capped = (
            ""
            if own is None
            else f" (its capability is {gpus(own)}; the cluster's GPUs less the other queues' guarantees leave it "
            f"{gpus(limit)})"
        )
        return Reason(
            f"{which} is at {gpus(allocated)} of {gpus(limit)} GPUs{capped} and the pending pods need "
            f"{gpus(need)} more{admitted}",
            key,
        )
    held = enqueue_limit(session, job, gpu)
    if held is not None:
        name, allocated, reserved, limit, need = held
        return Reason(
            f"queue `{name}` has {gpus(allocated)} of its {gpus(limit)} GPUs allocated and {gpus(reserved)} held by "
            f"admitted PodGroups whose pods wait; the model's PodGroup needs {gpus(need)}, so it is not admitted, "
            "and a PodGroup that is not admitted neither starts nor preempts",
            f"{queue_keys(spec).get(name, tenant_key)}.capability",
        )
    task = pending[0]
    shaped = _shape_nodes(session, task)
    if not shaped:
        return Reason(
            f"no node can hold a pod of {gpus(task.resreq.get(gpu, 0.0))} GPUs with the model's node selector and "
            "tolerations",
            f"models.{model.name}.resources",
            never=True,
        )
    tier = tier_of(job.topology)
    size = model.gang.pods
    if tier is not None and session.hypernodes and size > 1:
        domains = [h for h in session.hypernodes.values() if h.tier <= tier and h.name != ROOT]
        if domains:
            label = (
                spec.topology.tiers[tier - 1] if spec.topology and tier <= len(spec.topology.tiers) else f"tier {tier}"
            )
            if max(len(h.nodes & shaped) for h in domains) < size:
                return Reason(
                    f"no domain up to {label} has {size} nodes for one gang",
                    f"models.{model.name}.topology",
                    never=True,
                )
            free = _free_nodes(session, task)
            fullest = max(len(h.nodes & free) for h in domains)
            if fullest < size:
                return Reason(
                    f"no domain up to {label} has {size} nodes with {gpus(task.resreq.get(gpu, 0.0))} free GPUs, "
                    f"the fullest has {fullest}",
                    f"models.{model.name}.topology",
                )
    free = _free_nodes(session, task)
    if len(free) < size:
        blocked, key = _eviction_blocked(session, job, model, tenant_key)
        return Reason(
            f"{len(free)} node(s) have {gpus(task.resreq.get(gpu, 0.0))} free GPUs{_why_not_free(session, task)} "
            f"and the gang needs {size}; {blocked}",
            key,
        )
    return _last_word(session, job, model, tenant_key)


LAST_WORDS = {
    "enqueue": (
        "its PodGroup is not admitted: queue `{queue}` cannot take the PodGroup's minResources now",
        "{tenant}.capability",
    ),
    "queue": ("queue `{queue}` has no room for its pending pods now", "{tenant}.deserved"),
    "nodes": ("no set of nodes holds all of its pods at once now", "models.{model}.resources"),
}
"""The model's own words for why a job was left, as sentences and the key that would change it."""


def _last_word(session: Session, job: Job, model: ModelSpec, tenant_key: str) -> Reason:
    """What the scheduler last said of the job: the model's word as a sentence, or the message of
    the PodGroup's Unschedulable condition Volcano's own code wrote (`whatif.volcano`)."""
    word = session.unschedulable.get(job.uid, "")
    if word in LAST_WORDS:
        text, key = LAST_WORDS[word]
        fill = {"queue": job.queue, "tenant": tenant_key, "model": model.name}
        return Reason(text.format(**fill), key.format(**fill))
    if word:
        sentence = translate(word)
        if sentence is not None:
            return Reason(sentence, f"models.{model.name}.resources", volcano=word)
        # The cluster's own words (names it holds) in a code span: nothing in them can format a comment.
        return Reason(f"Volcano says: {code(word)}", f"models.{model.name}", volcano=word)
    return Reason("the scheduler has not placed it yet", f"models.{model.name}")


def _why_not_free(session: Session, task: Task) -> str:
    """Of the nodes that could hold the pod when empty, those that cannot now for another reason
    than pods running on them: cordoned, at their pod limit, or with the room being released."""
    cordoned = at_limit = releasing = 0
    for node in session.nodes.values():
        if not fits(task.resreq, node.allocatable):
            continue
        if node.unschedulable:
            cordoned += 1
        elif fits(task.resreq, node.idle):
            continue
        elif node.idle.get(PODS, 0.0) < 1:
            at_limit += 1
        elif fits(task.resreq, node.future_idle):
            releasing += 1
    parts = [
        f"{count} {what}"
        for count, what in (
            (cordoned, "cordoned"),
            (at_limit, "at their pod limit"),
            (releasing, "with the room being released by evicted pods"),
        )
        if count
    ]
    return f" ({'; '.join(parts)} of the others)" if parts else ""


def _queues(names: list[str], shown: int = 3) -> str:
    listed = ", ".join(f"`{q}`" for q in names[:shown])
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"queue {listed}{more} {'is' if len(names) == 1 else 'are'}"


def _eviction_blocked(session: Session, job: Job, model: ModelSpec, tenant_key: str) -> tuple[str, str]:
    """Why nothing is evicted for the job, and the key that would change it: the model's priority
    class only where a higher one would let it preempt running work of its queue (work that may be
    preempted: `volcano.sh/preemptable` not false), else the queue's share."""
    jobs = session.jobs
    same = [
        j
        for j in jobs.values()
        if j.queue == job.queue and j.uid != job.uid and any(t.status == RUNNING for t in j.tasks)
    ]
    higher = [j for j in same if j.priority >= job.priority]
    parts = []
    key = f"{tenant_key}.deserved"
    if same and len(higher) == len(same):
        parts.append(
            f"priority {job.priority} cannot preempt the running gangs of queue `{job.queue}` "
            f"(priority {min(j.priority for j in higher)} or more)"
        )
        if any(t.preemptable for j in higher for t in j.tasks if t.status == RUNNING):
            key = f"models.{model.name}.priorityClass"
    others = {
        j.queue for j in jobs.values() if j.queue != job.queue and any(t.status in ALLOCATED_STATUSES for t in j.tasks)
    }
    closed = [q for q in sorted(others) if not session.queues[q].reclaimable]
    if closed:
        parts.append(f"{_queues(closed)} not reclaimable")
    rest = [q for q in sorted(others) if q not in closed]
    if rest:
        parts.append(f"{_queues(rest)} within their deserved share or guarantee")
    return "; ".join(parts) or "nothing may be evicted for it", key


def queue_headroom(session: Session, queue: str, gpu: str) -> float | None:
    """GPUs the queue may still take (capacity: up to its real capability; proportion: deserved)."""
    attr, plugin = _queue_attr(session, queue)
    if attr is None:
        return None
    limit = (attr.real_capability if plugin == "capacity" else attr.deserved).get(gpu, float("inf"))
    if limit == float("inf"):
        return None
    return (limit - attr.allocated.get(gpu, 0.0)) / 1000
