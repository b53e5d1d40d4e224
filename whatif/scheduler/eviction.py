"""The evicting actions that take pods one at a time: preempt (`actions/preempt/preempt.go`) and
reclaim (`actions/reclaim/reclaim.go`); their gang-aware forms are in `gang_eviction`.

Only admitted, valid, starving jobs act. preempt takes victims in the preemptor's queue (skipping
jobs with a network topology, upstream issue 4374), reclaim from other queues that are reclaimable,
pod by pod per node until the preemptor fits, and the job keeps the evictions only when it is then
pipelined.
"""

from __future__ import annotations

from collections.abc import Callable

from whatif.scheduler.actions import best_queue, pop_best
from whatif.scheduler.model import PREEMPTABLE_STATUSES, RUNNING, Job, Node, Task
from whatif.scheduler.plugins import TOO_MANY_PODS
from whatif.scheduler.resources import fits, plus, total
from whatif.scheduler.session import Session, Statement, sort_by

Filter = Callable[[Task], bool]


def preemptors(session: Session, skip_topology: bool) -> dict[str, list[Job]]:
    fw = session.fw
    out: dict[str, list[Job]] = {}
    for job in sorted(session.jobs.values(), key=lambda j: j.order):
        if job.is_pending() or job.queue not in session.queues or fw.job_valid(job):
            continue
        if not fw.job_starving(job) or (skip_topology and job.has_topology):
            continue
        out.setdefault(job.queue, []).append(job)
    return out


def _evict_on_node(session: Session, task: Task, node: Node, victims: list[Task], stmt: Statement) -> bool:
    """Evict in victim order until the task fits, then pipeline it there (`normalPreempt`,
    `reclaimForTask`); the node's evictions are undone when it still does not fit."""
    fw = session.fw
    queue = session.queues[session.jobs[task.job].queue]
    if not fits(task.resreq, plus(node.future_idle, total(v.resreq for v in victims))):
        return False
    local = Statement(session)
    ordered = session.victim_order(victims, task)
    while not (fw.allocatable(queue, task) and fits(task.resreq, node.future_idle)):
        if not ordered:
            break
        local.evict(ordered.pop(0))
    if not (fw.allocatable(queue, task) and fits(task.resreq, node.future_idle)):
        local.discard()
        return False
    stmt.merge(local)
    stmt.pipeline(task, node.name)
    return True


def _predicate_nodes(session: Session, task: Task) -> list[Node]:
    """`PredicateForPreemptAction`: only reasons eviction cannot resolve rule a node out (a full
    pod count can be resolved by evicting). In the session's node order, which is how reclaim
    tries them (`reclaimForTask` walks `PredicateNodes`' result unscored)."""
    fw = session.fw
    return [n for n in session.nodes.values() if (fw.predicate(task, n) or TOO_MANY_PODS) == TOO_MANY_PODS]


def _nodes_for(session: Session, task: Task) -> list[Node]:
    """The nodes preempt tries, best score first (`normalPreempt`: `PrioritizeNodes`, `SortNodes`)."""
    nodes = _predicate_nodes(session, task)
    scores = session.fw.node_scores(task, nodes)
    return sorted(nodes, key=lambda n: (-scores[n.name], n.name))


def _preempt_task(session: Session, task: Task, stmt: Statement, victim_filter: Filter) -> bool:
    if task.preemption_never:
        return False
    fw = session.fw
    for node in _nodes_for(session, task):
        candidates = [t for t in node.tasks.values() if victim_filter(t)]
        victims = fw.preemptable(task, candidates) if candidates else []
        # No victims is no reason to skip a node: a preemptor that fits its future idle is
        # pipelined there without evicting (`ValidateVictims`, pkg/scheduler/util/scheduler_helper.go,
        # and `normalPreempt`, pkg/scheduler/actions/preempt/preempt.go).
        if _evict_on_node(session, task, node, victims, stmt):
            return True
    return False


def preempt(session: Session) -> None:
    fw, jobs = session.fw, session.jobs
    by_queue = preemptors(session, skip_topology=True)
    for queue_name in [q.name for q in sort_queues(session, list(by_queue))]:
        waiting = by_queue[queue_name]
        while waiting:
            job = pop_best(waiting, session)
            stmt = Statement(session)
            tasks = sort_by([t for t in job.pending_tasks() if True], fw.task_order)
            for task in tasks:
                if not fw.job_starving(job):
                    break

                def same_queue(victim: Task, task: Task = task, job: Job = job) -> bool:
                    vj = jobs[victim.job]
                    return (
                        victim.status in PREEMPTABLE_STATUSES
                        and not (task.best_effort and not victim.best_effort)
                        and victim.preemptable
                        and vj.queue == job.queue
                        and vj.uid != job.uid
                    )

                _preempt_task(session, task, stmt, same_queue)
            if fw.job_pipelined(job):
                stmt.commit(job.uid)
            else:
                stmt.discard()
                session.unschedulable.setdefault(job.uid, "preempt")
        for job in [j for j in session.jobs.values() if j.queue == queue_name]:
            _preempt_within_job(session, job)


def _preempt_within_job(session: Session, job: Job) -> None:
    fw = session.fw
    if job.is_pending() or fw.job_valid(job) or not fw.job_starving(job) or job.has_topology:
        return
    for task in sort_by(job.pending_tasks(), fw.task_order):
        stmt = Statement(session)

        def own(victim: Task, task: Task = task) -> bool:
            return (
                victim.job == job.uid
                and victim.status in PREEMPTABLE_STATUSES
                and victim.preemptable
                and not (task.best_effort and not victim.best_effort)
            )

        if not _preempt_task(session, task, stmt, own):
            stmt.discard()
            break
        stmt.commit(job.uid)


def sort_queues(session: Session, names: list[str]) -> list:
    queues = [session.queues[n] for n in names]
    return sort_by(queues, session.fw.queue_order)


def reclaim(session: Session) -> None:
    fw, jobs, queues = session.fw, session.jobs, session.queues
    by_queue = preemptors(session, skip_topology=False)
    while by_queue:
        queue = best_queue(session, [queues[q] for q in by_queue])
        waiting = by_queue[queue.name]
        if fw.overused(queue):
            del by_queue[queue.name]
            continue
        job = pop_best(waiting, session)
        if not waiting:
            del by_queue[queue.name]
        stmt = Statement(session)
        for task in sort_by(job.pending_tasks(), fw.task_order):
            if not fw.job_starving(job):
                break
            if task.preemption_never or not fw.preemptive(queue, [task]):
                continue
            for node in _predicate_nodes(session, task):
                reclaimees = [
                    t
                    for t in node.tasks.values()
                    if t.status == RUNNING
                    and t.preemptable
                    and jobs[t.job].queue != job.queue
                    and queues[jobs[t.job].queue].reclaimable
                ]
                if not reclaimees:  # a node without reclaimees is skipped (`reclaimForTask`)
                    continue
                # ... but one whose reclaimees all stay may still take the task in its future idle
                # (`ValidateVictims` accepts no victims), as in preempt
                if _evict_on_node(session, task, node, fw.reclaimable(task, reclaimees), stmt):
                    break
        if fw.job_pipelined(job):
            stmt.commit(job.uid)
        else:
            stmt.discard()
            session.unschedulable.setdefault(job.uid, "reclaim")
