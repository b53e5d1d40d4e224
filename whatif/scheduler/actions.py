"""The placing actions: enqueue, allocate and backfill (`pkg/scheduler/actions/*/…go`).

enqueue admits Pending PodGroups queue by queue (`enqueue.go` `Action.Execute`): a PodGroup without
`minResources` always, any other when the plugins' vote permits. allocate (`allocate.go`) takes
admitted, valid jobs queue by queue in the plugins' order, places tasks on idle nodes (or pipelines
them onto resources being released) and commits only a job that becomes ready; jobs with a hard
topology or sub-groups are placed inside one HyperNode of the narrowest tier that holds them.
backfill (`backfill.go`) places only BestEffort pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from whatif.scheduler.gradients import fullness, may_hold_a_pod, members, sub_domains
from whatif.scheduler.model import ALLOCATED_STATUSES, PENDING, Job, Node, Queue, Task
from whatif.scheduler.resources import Resources, fits, total
from whatif.scheduler.session import Session, Statement, sort_by
from whatif.scheduler.spread import is_crowded, spread_candidates
from whatif.scheduler.subgroups import SubJob, subjobs
from whatif.scheduler.topology import ROOT, NetworkTopologyPlugin, lowest_containing


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


CLASSES_PER_SEARCH = 64
"""Node classes a whole-cluster search looks at once it has a feasible node (`choose_node`)."""


def nodes_to_find(count: int) -> int:
    """`CalculateNumOfFeasibleNodesToFind` (pkg/scheduler/util/scheduler_helper.go, 50% adaptive):
    every node up to 100, else a share that falls with the cluster's size, at least 5% and 100."""
    if count <= 100:
        return count
    return max(100, count * max(5, 50 - count // 125) // 100)


def node_verdict(session: Session, task: Task, node: Node) -> tuple[bool, float] | None:
    """None when the task cannot go on the node; else (fits its idle room, score). Remembered per
    node class and task shape for the session (both change whenever the answer could)."""
    key = (node.class_key, task.shape)
    crowded = bool(task.spread) and is_crowded(session, task, node)
    if key not in session.verdicts or crowded:
        # a spread constraint refuses or scores a node only by the task's pods in its domain: the
        # answer for a domain without any is the class's, one with some is the node's own
        fw = session.fw
        verdict = None
        if fits(task.resreq, node.future_idle) and fw.predicate(task, node) is None:
            verdict = (fits(task.resreq, node.idle), fw.node_score(task, node))
        if crowded:
            return verdict
        session.verdicts[key] = verdict
    return session.verdicts[key]


def choose_node(session: Session, task: Task, nodes: list[Node] | None) -> Node | None:
    """`PredicateNodes` then `prioritizeNodes`: among the nodes that fit the task (future idle
    resources) and pass the predicates, those with idle room before those that only free up, then
    the highest score (each node's own scores, cached per class, and the batch scores of that set
    of candidates).

    Nodes the scheduler cannot tell apart (`Node.class_key`) are decided once per class. Upstream
    stops searching once it has found `CalculateNumOfFeasibleNodesToFind` feasible nodes (5% of a
    large cluster, from a rotating start) and breaks score ties at random; on the whole cluster the
    model looks at the oldest class (usually the nodes nothing has changed yet) and then the most
    recently changed ones (partly used nodes, which binpack prefers), until it has seen that many
    feasible nodes, or `CLASSES_PER_SEARCH` classes and a feasible one, and takes the first node of
    the best class.
    """
    fw = session.fw
    by_class: dict[tuple[int, int], dict[str, Node]]
    keys: Iterable[tuple[int, int]]
    whole = nodes is None
    if whole and task.spread:  # each node its own: see `node_verdict`
        if session.unplaceable.get(task.shape) == session.moves:
            return None
        nodes = spread_candidates(session, task)
    if nodes is None:
        if session.unplaceable.get(task.shape) == session.moves:
            return None  # searched in vain and nothing has moved since
        by_class = session.classes
        oldest = next(iter(by_class), None)
        keys = chain([oldest] if oldest is not None else [], (k for k in reversed(by_class) if k != oldest))
        wanted = nodes_to_find(len(session.nodes))
        limit = CLASSES_PER_SEARCH
    else:
        wanted = len(nodes)
        by_class = {}
        one_by_one = fw.couples_nodes(task) or bool(task.spread)
        for index, node in enumerate(nodes):
            by_class.setdefault((index, 0) if one_by_one else node.class_key, {})[node.name] = node
        keys = list(by_class)
        limit = len(by_class) + 1
    verdicts, shape = session.verdicts, task.shape
    idle: list[tuple[float, Node]] = []
    freeing: list[tuple[float, Node]] = []
    for visited, key in enumerate(keys):
        if visited >= limit and (idle or freeing):
            break
        group = by_class[key]
        first = next(iter(group.values()))
        cached = (first.class_key, shape)
        verdict = verdicts[cached] if cached in verdicts and not task.spread else node_verdict(session, task, first)
        if verdict is None:
            continue
        (idle if verdict[0] else freeing).append((verdict[1], first))
        wanted -= len(group)
        if wanted <= 0:
            break
    candidates = idle or freeing
    if not candidates:
        if whole:
            session.unplaceable[task.shape] = session.moves
        return None
    batch = fw.batch_node_scores(task, [node for _, node in candidates]) if len(candidates) > 1 else {}
    return min(candidates, key=lambda c: (-(c[0] + batch.get(c[1].name, 0.0)), c[1].name))[1]


def _stop_after_failure(job: Job, sub: SubJob | None) -> bool:
    """`NeedContinueAllocating`, negated."""
    if job.min_member == len(job.tasks):
        return True
    return bool(sub is not None and sub.policy is not None and sub.min_available >= len(sub.tasks))


def place_tasks(
    session: Session, job: Job, tasks: list[Task], nodes: list[Node] | None, stmt: Statement, sub: SubJob | None
) -> None:
    """`allocateResourcesForTasks`: until the job (or sub-group) is ready; `nodes` None is the
    whole cluster."""
    fw = session.fw
    queue = session.queues[job.queue]
    plugin = fw.plugin("network-topology-aware") if sub is not None and sub.topology is not None else None
    topology = plugin if isinstance(plugin, NetworkTopologyPlugin) else None
    spanned = _spanned(session, sub) if topology is not None and sub is not None else ""
    for task in sort_by(tasks, fw.task_order):
        if task.status != PENDING:
            continue
        if not fw.allocatable(queue, task):
            session.unschedulable[job.uid] = "queue"
            continue
        if topology is not None:
            # set once a node passes the predicates (`allocateResourcesForTasks`), cleared when
            # the statement holding the task is discarded
            before, task.job_allocated_hypernode = task.job_allocated_hypernode, spanned
        node = choose_node(session, task, nodes)
        if node is None:
            if topology is not None:
                task.job_allocated_hypernode = before
            session.unschedulable[job.uid] = "nodes"
            if _stop_after_failure(job, sub):
                break
            continue
        if fits(task.resreq, node.idle):
            stmt.allocate(task, node.name)
        else:
            stmt.pipeline(task, node.name)
        if topology is not None:
            spanned = topology.spans(spanned, node.name)
        if sub.is_ready() if sub is not None and sub.policy is not None else fw.job_ready(job):
            break


def _spanned(session: Session, sub: SubJob) -> str:
    """`SubJobInfo.AllocatedHyperNode` (`recoverAllocatedHyperNode`): the lowest HyperNode holding
    every node its allocated pods are on; empty when none is."""
    placed = {t.node for t in sub.tasks if t.status in ALLOCATED_STATUSES and t.node}
    lowest = lowest_containing(placed, session.hypernodes) if placed else None
    return lowest.name if lowest is not None else ""


def _worksheet(session: Session, job: Job) -> list[SubJob]:
    """`organizeJobWorksheet`: sub-groups with pending pods, those needed for `minSubGroups` first;
    a job without sub-group policies is one sub-group that places a pod per turn once ready."""
    subs = [s for s in subjobs(job) if s.pending()]
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
    """`allocateForJob` in one HyperNode: each sub-group in worksheet order, a sub-group with its
    own topology in the first HyperNode of its gradient where it becomes ready or pipelined
    (`allocateForSubJob`)."""
    fw = session.fw
    for sub in _worksheet(session, job):
        pending = sub.pending()
        for domain in sub_domains(session, sub, hypernode, pending):
            trial = Statement(session)
            place_tasks(session, job, pending, members(session, domain), trial, sub)
            if trial.operations and (sub.is_pipelined() if sub.policy is not None else fw.job_pipelined(job)):
                stmt.merge(trial)
                break
            trial.discard()
        if fw.job_ready(job):
            break


def _least_progress(job: Job) -> Resources:
    """A lower bound of what placing the job anywhere needs: its smallest pending sub-group, or
    the pods it lacks of its `minMember` (one pod once it is ready)."""
    pending = [t for t in job.pending_tasks() if not t.best_effort]
    if not pending:
        return {}
    if job.subgroups:
        needs = [
            total(t.resreq for t in sub.pending())
            for sub in subjobs(job)
            if any(t.status == PENDING for t in sub.tasks)
        ]
        return _smallest(needs)
    count = max(1, min(len(pending), job.min_member - job.ready_num))
    return {k: v * count for k, v in _smallest([t.resreq for t in pending]).items()}


def _smallest(amounts: list[Resources]) -> Resources:
    """The least of each resource over `amounts` (absent counts as none)."""
    if not amounts:
        return {}
    names = set().union(*amounts)
    return {name: min(a.get(name, 0.0) for a in amounts) for name in names}


def _may_progress(session: Session, hypernode: str, least: Resources, pending: list[Task]) -> bool:
    """A HyperNode worth a trial: its future idle total holds the least that would make progress
    and one of its nodes holds a pending pod."""
    totals = session.hypernode_totals.get(hypernode)
    if totals is not None and not fits(least, totals.future_idle):
        return False
    return may_hold_a_pod(session, hypernode, pending)


def place_job(session: Session, job: Job) -> Statement | None:
    """`allocateForJob` or `allocateResourcesForTasks` on every node, then the commit rule."""
    fw = session.fw
    if job.hard_topology or job.subgroups:
        gradients = fw.hypernode_gradients(job, "allocate")
        if gradients is None:
            gradients = [[ROOT]]  # no plugin offers gradients: the whole cluster
        if ROOT not in session.hypernodes:
            gradients = [[ROOT]] if not job.hard_topology else []
        for gradient in gradients:
            # Upstream dry-runs every HyperNode of the gradient and keeps the best score; the model
            # tries them fullest first (the HyperNode binpack preference) and keeps the first that
            # holds the job, which is what that score prefers and keeps large clusters fast. The
            # score counts all the job's pods, placed ones too (`getSubJobHyperNodeBinPackingScore`).
            pending = job.pending_tasks()
            request = total(t.resreq for t in job.tasks)
            least = _least_progress(job)
            hold = [h for h in gradient if _may_progress(session, h, least, pending)]
            if len(hold) < len(gradient):
                session.unschedulable[job.uid] = "nodes"
            for hypernode in sorted(hold, key=lambda h: (-fullness(session, h, request), h)):
                stmt = Statement(session)
                if hypernode in session.hypernodes:
                    _try_in(session, job, hypernode, stmt)
                else:
                    place_tasks(session, job, job.pending_tasks(), None, stmt, None)
                if stmt.operations and (fw.job_ready(job) or fw.job_pipelined(job)):
                    if hypernode != ROOT:
                        job.allocated_hypernode = hypernode
                    return stmt
                stmt.discard()
        session.unschedulable.setdefault(job.uid, "topology")
        return None
    stmt = Statement(session)
    place_tasks(session, job, [t for t in job.pending_tasks() if not t.best_effort], None, stmt, None)
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
            node = choose_node(session, task, None)
            if node is None:
                continue
            stmt = Statement(session)
            stmt.allocate(task, node.name)
            if fw.job_ready(job):
                stmt.commit(job.uid)
