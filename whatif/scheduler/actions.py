"""The placing actions: enqueue, allocate and backfill (`pkg/scheduler/actions/*/…go`).

enqueue admits Pending PodGroups queue by queue (`enqueue.go` `Action.Execute`): a PodGroup without
`minResources` always, any other when the plugins' vote permits. allocate (`allocate.go`) takes
admitted, valid jobs queue by queue in the plugins' order, places tasks on idle nodes (or pipelines
them onto resources being released) and commits only a job that becomes ready; jobs with a hard
topology or sub-groups are placed inside one HyperNode of the narrowest tier that holds them.
backfill (`backfill.go`) places only BestEffort pods.
"""

from __future__ import annotations

from whatif.scheduler.model import PENDING, Job, Node, Queue, Task
from whatif.scheduler.resources import fits, total
from whatif.scheduler.session import Session, Statement, sort_by
from whatif.scheduler.subgroups import SubJob, subjobs
from whatif.scheduler.topology import ROOT


def queue_loop(session: Session, jobs_by_queue: dict[str, list[Job]]) -> list[tuple[Queue, list[Job]]]:
    queues = [session.queues[name] for name in jobs_by_queue if name in session.queues]
    return [(q, jobs_by_queue[q.name]) for q in queues]


def pop_best(items: list[Job], session: Session) -> Job:
    best = items[0]
    for job in items[1:]:
        if session.fw.job_order(job, best):
            best = job
    items.remove(best)
    return best


def best_queue(session: Session, candidates: list[Queue]) -> Queue:
    best = candidates[0]
    for queue in candidates[1:]:
        if session.fw.queue_order(queue, best):
            best = queue
    return best


def enqueue(session: Session) -> None:
    fw = session.fw
    pending: dict[str, list[Job]] = {}
    for job in session.jobs.values():
        if job.queue in session.queues and job.is_pending():
            pending.setdefault(job.queue, []).append(job)
    while pending:
        queue = best_queue(session, [session.queues[q] for q in pending])
        jobs = pending[queue.name]
        job = pop_best(jobs, session)
        if not jobs:
            del pending[queue.name]
        if job.min_resources is None or fw.job_enqueueable(job):
            fw.job_enqueued(job)
            job.phase = "Inqueue"
        else:
            session.unschedulable[job.uid] = "enqueue"


def _candidate_jobs(session: Session, enqueue_on: bool) -> dict[str, list[Job]]:
    fw = session.fw
    by_queue: dict[str, list[Job]] = {}
    for job in sorted(session.jobs.values(), key=lambda j: j.order):
        if job.queue not in session.queues:
            continue
        if job.is_pending():
            if enqueue_on:
                continue
            job.phase = "Inqueue"
        if fw.job_valid(job):
            continue
        if job.has_topology and not session.hypernodes_ready:
            continue
        if not any(t.status == PENDING and not t.best_effort for t in job.tasks):
            continue
        by_queue.setdefault(job.queue, []).append(job)
    return by_queue


def nodes_to_find(count: int) -> int:
    """`CalculateNumOfFeasibleNodesToFind` (pkg/scheduler/util/scheduler_helper.go, 50% adaptive):
    every node up to 100, else a share that falls with the cluster's size, at least 5% and 100."""
    if count <= 100:
        return count
    percentage = max(5, 50 - count // 125)
    return max(100, count * percentage // 100)


def feasible_nodes(session: Session, task: Task, nodes: list[Node]) -> list[Node]:
    """`PredicateNodes`: nodes that fit and pass the predicates, searched from where the previous
    search stopped and ended once enough are found."""
    fw = session.fw
    wanted, found = nodes_to_find(len(nodes)), []
    start = session.node_cursor % len(nodes) if nodes else 0
    for offset in range(len(nodes)):
        node = nodes[(start + offset) % len(nodes)]
        if fits(task.resreq, node.future_idle) and fw.predicate(task, node) is None:
            found.append(node)
            if len(found) >= wanted:
                session.node_cursor = start + offset + 1
                break
    return found


def best_node(session: Session, task: Task, candidates: list[Node]) -> Node:
    """`prioritizeNodes`: nodes with idle room before nodes that only free up, then the highest
    score (upstream breaks ties at random; the model takes the first by name)."""
    idle = [n for n in candidates if fits(task.resreq, n.idle)]
    pool = idle or candidates
    if len(pool) == 1:
        return pool[0]
    fw = session.fw
    return max(sorted(pool, key=lambda n: n.name), key=lambda n: fw.node_score(task, n))


def _stop_after_failure(job: Job, sub: SubJob | None) -> bool:
    """`NeedContinueAllocating`, negated."""
    if job.min_member == len(job.tasks):
        return True
    return bool(sub is not None and sub.policy is not None and sub.min_available >= len(sub.tasks))


def place_tasks(
    session: Session, job: Job, tasks: list[Task], nodes: list[Node], stmt: Statement, sub: SubJob | None
) -> None:
    """`allocateResourcesForTasks`: until the job (or sub-group) is ready."""
    fw = session.fw
    queue = session.queues[job.queue]
    for task in sort_by(tasks, fw.task_order):
        if task.status != PENDING:
            continue
        if not fw.allocatable(queue, task):
            session.unschedulable[job.uid] = "queue"
            continue
        candidates = feasible_nodes(session, task, nodes)
        if not candidates:
            session.unschedulable[job.uid] = "nodes"
            if _stop_after_failure(job, sub):
                break
            continue
        node = best_node(session, task, candidates)
        if fits(task.resreq, node.idle):
            stmt.allocate(task, node.name)
        else:
            stmt.pipeline(task, node.name)
        if sub.is_ready() if sub is not None and sub.policy is not None else fw.job_ready(job):
            break


def _worksheet(session: Session, job: Job) -> list[SubJob]:
    """`organizeJobWorksheet`: sub-groups with pending pods, those needed for `minSubGroups` first;
    a job without sub-group policies is one sub-group that places a pod per turn once ready."""
    subs = [s for s in subjobs(job) if any(t.status == PENDING and not t.best_effort for t in s.tasks)]
    if not job.subgroups:
        return subs
    subs = [s for s in subs if not s.is_ready()]
    need = {p.name: p.min_subgroups for p in job.subgroups}
    ready = {p.name: sum(1 for s in subjobs(job) if s.policy is p and s.is_ready()) for p in job.subgroups}
    required = []
    for sub in subs:
        if sub.policy is not None and ready[sub.policy.name] < need[sub.policy.name]:
            required.append(sub)
            ready[sub.policy.name] += 1
    rest = [s for s in subs if s not in required]
    return required + rest


def _try_in(session: Session, job: Job, hypernode: str, stmt: Statement) -> None:
    nodes = [session.nodes[n] for n in sorted(session.hypernodes[hypernode].nodes) if n in session.nodes]
    fw = session.fw
    for sub in _worksheet(session, job):
        pending = [t for t in sub.tasks if t.status == PENDING and not t.best_effort]
        place_tasks(session, job, pending, nodes, stmt, sub)
        if fw.job_ready(job):
            break


def _fullness(session: Session, hypernode: str) -> float:
    if hypernode not in session.hypernodes:
        return 0.0
    members = [session.nodes[n] for n in session.hypernodes[hypernode].nodes if n in session.nodes]
    allocatable, used = total(n.allocatable for n in members), total(n.used for n in members)
    shares = [used.get(k, 0.0) / v for k, v in allocatable.items() if v > 0 and k not in ("pods",)]
    return max(shares, default=0.0)


def place_job(session: Session, job: Job) -> Statement | None:
    """`allocateForJob` or `allocateResourcesForTasks` on every node, then the commit rule."""
    fw = session.fw
    if job.hard_topology or job.subgroups:
        gradients = fw.hypernode_gradients(job, "allocate") or [[ROOT]]
        if ROOT not in session.hypernodes:
            gradients = [[ROOT]] if not job.hard_topology else []
        for gradient in gradients:
            # Upstream dry-runs every HyperNode of the gradient and keeps the best score; the model
            # tries them fullest first (the HyperNode binpack preference) and keeps the first that
            # holds the job, which is what that score prefers and keeps large clusters fast.
            for hypernode in sorted(gradient, key=lambda h: (-_fullness(session, h), h)):
                stmt = Statement(session)
                if hypernode in session.hypernodes:
                    _try_in(session, job, hypernode, stmt)
                else:
                    place_tasks(session, job, job.pending_tasks(), list(session.nodes.values()), stmt, None)
                if stmt.operations and (fw.job_ready(job) or fw.job_pipelined(job)):
                    if hypernode != ROOT:
                        job.allocated_hypernode = hypernode
                    return stmt
                stmt.discard()
        session.unschedulable.setdefault(job.uid, "topology")
        return None
    stmt = Statement(session)
    place_tasks(
        session, job, [t for t in job.pending_tasks() if not t.best_effort], list(session.nodes.values()), stmt, None
    )
    if fw.job_ready(job) or fw.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def allocate(session: Session) -> None:
    fw = session.fw
    by_queue = _candidate_jobs(session, "enqueue" in session.actions)
    while by_queue:
        queue = best_queue(session, [session.queues[q] for q in by_queue])
        jobs = by_queue[queue.name]
        if fw.overused(queue):
            del by_queue[queue.name]
            continue
        job = pop_best(jobs, session)
        stmt = place_job(session, job)
        if stmt is not None and fw.job_ready(job):
            placed = bool(stmt.operations)
            stmt.commit(job.uid)
            session.unschedulable.pop(job.uid, None)
            if placed and any(t.status == PENDING and not t.best_effort for t in job.tasks):
                jobs.append(job)
        if not jobs:
            del by_queue[queue.name]


def backfill(session: Session) -> None:
    fw = session.fw
    for job in sorted(session.jobs.values(), key=lambda j: j.order):
        if job.is_pending() or fw.job_valid(job) or job.queue not in session.queues:
            continue
        for task in sort_by([t for t in job.tasks if t.status == PENDING and t.best_effort], fw.task_order):
            nodes = [n for n in session.nodes.values() if fw.predicate(task, n) is None]
            if not nodes:
                continue
            stmt = Statement(session)
            stmt.allocate(task, best_node(session, task, nodes).name)
            if fw.job_ready(job):
                stmt.commit(job.uid)
