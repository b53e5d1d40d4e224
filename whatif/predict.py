"""From simulated cycles to what a reviewer reads: a verdict per model, the work a quota change
exposes per tenant.

The scheduler runs its actions every second; an eviction makes room only once the victims have
gone. The prediction therefore runs cycles until nothing changes (at most `MAX_CYCLES`): binds
start pods, evicted pods leave (their controllers recreate them Pending), pipelined pods wait for
the next cycle. A model that still cannot run is tried once more on the same nodes with nothing
else running: if it fails there too it can never run as configured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import scheduler_conf
from live.cluster_state import ClusterState
from offline.manifests import Rendered
from whatif import reasons
from whatif.cluster import ModelJobs, arrive, arrive_all, model_tasks, runs
from whatif.names import replica_nodes
from whatif.races import Empty, cycles_in_order, hold_in_order, look_for_races, without
from whatif.scheduler.engine import ACTIONS, open_session, run_cycle
from whatif.scheduler.model import ALLOCATED, BINDING, PENDING, PIPELINED, RELEASING, RUNNING, Task
from whatif.scheduler.queues import QueuePlugin
from whatif.scheduler.session import Session
from whatif.scheduler.topology import ROOT, lowest_containing
from whatif.workload import Objects, build_session, waking_note

MAX_CYCLES = 8
FITS, EVICTS, WAITS, NEVER = "fits", "fits-after-eviction", "waits", "never"


@dataclass
class Victim:
    namespace: str
    pod_group: str
    queue: str
    priority: int
    gpus: float
    domain: str
    action: str

    def as_json(self) -> dict[str, Any]:
        return {("podGroup" if key == "pod_group" else key): value for key, value in asdict(self).items()}


@dataclass
class Verdict:
    model: str
    verdict: str
    domain: str = ""
    victims: list[Victim] = field(default_factory=list)
    reason: str = ""
    headroom: float | None = None
    """The queue's GPUs left below its limit afterwards."""
    note: str = ""
    """What the reader should know about how sure the verdict is: where Volcano's own code decides
    by a random tie, or where the model disagrees with it."""
    key: str = ""
    """The stack key the reason names, the one that would change the verdict (a tenant's queue
    key when it waits for quota)."""
    volcano_message: str = ""
    """Volcano's own message the reason was made from (its PodGroup's Unschedulable condition)."""
    races: list[str] = field(default_factory=list)
    """New models of the change it races with: which of them runs is the order of `up` (`races`)."""
    in_order: bool | None = None
    """Whether it runs when `up` creates the change's new models one at a time in the stack's order,
    where that differs from the verdict (`races.mark_in_order`); None where it does not."""
    replicas: list[list[str]] = field(default_factory=list)
    """The nodes of each replica where it runs."""
    admitted: bool | None = None
    """Whether Volcano's enqueue admitted every PodGroup of the model (Volcano's own code only)."""
    pod_groups: list[str] = field(default_factory=list)
    """The model's PodGroups, `namespace/name` (Volcano's own code only)."""


def settle(session: Session) -> None:
    """Carry one cycle's decisions into the next: binds run, evicted pods are recreated Pending,
    pipelined pods wait again, and so do pods allocated in a statement that was kept but never
    committed (a job only pipelined: `allocate.go` neither commits nor discards it, and the
    session closes without binding them)."""
    for job in session.jobs.values():
        for task in job.tasks:
            if task.status == BINDING:
                session.set_status(task, RUNNING)
            elif (task.status == RELEASING and task.uid in session.evicted_by) or task.status in (PIPELINED, ALLOCATED):
                session.set_status(task, PENDING)
        if job.phase in ("Pending", "Inqueue", "") and job.count(RUNNING) >= job.min_member > 0:
            job.phase = "Running"
        elif job.phase == "Running" and job.count(RUNNING) == 0 < job.min_member:
            job.phase = "Pending"  # `getPodGroupPhase`, framework/session.go: its pods gone, admitted again


def simulate(
    session: Session, tiers: list[list[dict[str, Any]]], actions: tuple[str, ...], cycles: int | None = None
) -> dict[str, list[str]]:
    """Run cycles until quiet, and again once each wave of held pods arrives (`cluster.arrive`),
    `MAX_CYCLES` at most unless `cycles` says; returns every eviction as victim task -> [action,
    preemptor job]."""
    evicted: dict[str, list[str]] = {}
    seen: set[frozenset[str]] = set()
    for _ in range(cycles or MAX_CYCLES):
        session.binds, session.evictions, session.evicted_by = {}, [], {}
        open_session(session, tiers)
        run_cycle(session, actions)
        for task, (action, preemptor, node) in session.evicted_by.items():
            evicted.setdefault(task, [action, preemptor, node])
        changed = bool(session.binds or session.evictions)
        cycle = frozenset(session.evictions)
        settle(session)
        session.hypernodes.pop(ROOT, None)
        if not changed or (cycle and cycle in seen):  # quiet, or evicting the same pods again
            if not arrive(session):
                break
            seen.clear()
            continue
        seen.add(cycle)
    return evicted


@dataclass
class TenantExposure:
    tenant: str
    queue: str
    allocated: float
    deserved: float
    limit: float
    reclaimable: list[Victim] = field(default_factory=list)
    """Running PodGroups above the queue's deserved share, lowest priority first, as many as the
    excess covers: what reclaim may take from it."""
    over_capability: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "queue": self.queue,
            "allocatedGpus": self.allocated / 1000,
            "deservedGpus": self.deserved / 1000,
            "capabilityGpus": None if self.limit == float("inf") else self.limit / 1000,
            "overCapability": self.over_capability,
            "reclaimable": [v.as_json() for v in self.reclaimable],
        }


@dataclass
class Prediction:
    stack: str
    source: str
    policy: str
    verdicts: list[Verdict]
    tenants: list[TenantExposure]
    not_modelled: list[str]
    engine: str = "model"
    """Who answered: `volcano` (Volcano's own scheduling code) or `model` (the Python model)."""
    ties_tried: bool = True
    """Whether Volcano's code was run more than once, so a random tie between equal nodes shows
    (`volcano` only; at a size where each run is long, it runs once)."""
    policy_refused: str = ""
    """Why the Volcano release that answered could not read the stack's policy and ran its default."""

    @property
    def all_fit(self) -> bool:
        return all(v.verdict == FITS for v in self.verdicts)


def policy_of(spec: PlatformSpec) -> tuple[list[list[dict[str, Any]]], tuple[str, ...], dict[str, dict[str, Any]]]:
    conf = scheduler_conf(
        spec.config.volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models, spec.node_groups
    )
    tiers = [list(t["plugins"]) for t in conf["tiers"]]
    actions = tuple(a.strip() for a in str(conf["actions"]).split(",") if a.strip())
    configurations = {str(c["name"]): dict(c.get("arguments") or {}) for c in conf.get("configurations") or []}
    return tiers, actions, configurations


def domain_of(session: Session, nodes: set[str]) -> str:
    if not nodes:
        return ""
    found = lowest_containing(nodes, session.hypernodes)
    if found is None or found.name == ROOT:
        return "cluster"
    return session.domain_names.get(found.name, found.name)


def victims_by_preemptor(session: Session, evicted: dict[str, list[str]], gpu: str) -> dict[str, list[Victim]]:
    """Every eviction grouped by the job it was made for, then by victim PodGroup."""
    tasks = {t.uid: t for j in session.jobs.values() for t in j.tasks}
    grouped: dict[str, dict[str, tuple[list[Task], set[str], str]]] = {}
    for uid, (action, preemptor, node) in evicted.items():
        if uid in tasks:
            entry = grouped.setdefault(preemptor, {}).setdefault(tasks[uid].job, ([], set(), action))
            entry[0].append(tasks[uid])
            entry[1].add(node)
    out: dict[str, list[Victim]] = {}
    for preemptor, victims in grouped.items():
        for job_uid, (taken, nodes, action) in sorted(victims.items()):
            job = session.jobs[job_uid]
            out.setdefault(preemptor, []).append(
                Victim(
                    job.namespace,
                    job.name,
                    job.queue,
                    job.priority,
                    sum(t.resreq.get(gpu, 0.0) for t in taken) / 1000,
                    domain_of(session, nodes),
                    "reclaim" if "reclaim" in action else "preempt",
                )
            )
    return out


def tenant_exposure(session: Session, spec: PlatformSpec) -> list[TenantExposure]:
    gpu = spec.gpu_resource
    out = []
    lowest_first = sorted(session.jobs.values(), key=lambda j: (j.priority, j.uid))
    for name, tenant in spec.tenants.items():
        attr, plugin_name = None, ""
        for candidate in ("capacity", "proportion"):
            plugin = session.fw.plugin(candidate)
            if isinstance(plugin, QueuePlugin):
                attr, plugin_name = plugin.attrs.get(tenant.queue_name), candidate
        if attr is None:
            continue
        allocated, deserved = attr.allocated.get(gpu, 0.0), attr.deserved.get(gpu, 0.0)
        limit = (attr.real_capability if plugin_name == "capacity" else attr.deserved).get(gpu, float("inf"))
        exposure = TenantExposure(
            name, tenant.queue_name, allocated, deserved, limit, over_capability=allocated > limit
        )
        queue = session.queues.get(tenant.queue_name)
        excess = allocated - deserved
        if deserved and excess > 0 and queue is not None and queue.reclaimable:
            for job in lowest_first:
                if excess <= 0:
                    break
                if job.queue == tenant.queue_name and job.count(RUNNING):
                    nodes = {t.node for t in job.tasks if t.status == RUNNING}
                    used = sum(t.resreq.get(gpu, 0.0) for t in job.tasks if t.status == RUNNING)
                    excess -= used
                    exposure.reclaimable.append(
                        Victim(
                            job.namespace,
                            job.name,
                            job.queue,
                            job.priority,
                            used / 1000,
                            domain_of(session, nodes),
                            "reclaim",
                        )
                    )
        out.append(exposure)
    return out


def predict(state: ClusterState, spec: PlatformSpec, rendered: Rendered) -> Prediction:
    tiers, actions, configurations = policy_of(spec)
    session, models = build_session(state, spec, rendered)
    session.configurations = configurations
    not_modelled = open_session(session, tiers) + [a for a in actions if a not in ACTIONS]
    tenants = tenant_exposure(session, spec)
    session.hypernodes.pop(ROOT, None)
    evicted = simulate(session, tiers, actions)
    stuck = [name for name in spec.models if not runs(session, models[name])]
    empty = on_an_empty_cluster(stuck, lambda names: _on_an_empty_cluster(state, spec, rendered, names))
    open_session(session, tiers)  # the plugins' view of the cluster once it has settled, for reasons
    by_preemptor = victims_by_preemptor(session, evicted, spec.gpu_resource)
    verdicts = [verdict_of(session, empty.get(name), spec, models[name], by_preemptor) for name in spec.models]
    session.hypernodes.pop(ROOT, None)
    look_for_races(verdicts, state, spec, session, models, empty, partial(_in_order, state, spec, rendered))
    return Prediction(
        spec.stack, state.source, policy_text(tiers, actions), verdicts, tenants, sorted(set(not_modelled))
    )


def policy_text(tiers: list[list[dict[str, Any]]], actions: tuple[str, ...]) -> str:
    return f"actions {', '.join(actions)}; tiers " + " | ".join(", ".join(str(p["name"]) for p in t) for t in tiers)


def idle_cluster(state: ClusterState) -> ClusterState:
    """The cluster's nodes, queues, priority classes and HyperNodes with nothing running."""
    return ClusterState(
        nodes=state.nodes,
        queues=state.queues,
        priority_classes=state.priority_classes,
        hyper_nodes=state.hyper_nodes,
        source=state.source,
    )


def on_an_empty_cluster(stuck: list[str], tried: Callable[[list[str]], Empty]) -> dict[str, Empty]:
    """Each model that does not run, on the cluster's nodes with nothing else running (`tried`):
    what fails there can never run as configured. All of them are tried together first; one that
    does not run then is tried again alone, since the others of the same change can hold the
    quota or the nodes it needs (found on the real cluster: `tests/e2e/test_whatif_real.py`, a
    model answered `never` that ran)."""
    if not stuck:
        return {}
    together = tried(stuck)
    out = dict.fromkeys(stuck, together)
    if len(stuck) > 1:
        for name in stuck:
            if not runs(together[0], together[1][name]):
                out[name] = tried([name])
    return out


def _on_an_empty_cluster(state: ClusterState, spec: PlatformSpec, rendered: Rendered, names: list[str]) -> Empty:
    """The models `names` on the cluster's nodes with nothing else running."""
    idle = idle_cluster(state)
    alone, models = build_session(idle, spec, rendered, only=set(names))
    tiers, actions, configurations = policy_of(spec)
    alone.configurations = configurations
    simulate(alone, tiers, actions)
    open_session(alone, tiers)
    return alone, models


def verdict_of(
    session: Session,
    empty: tuple[Session, dict[str, ModelJobs]] | None,
    spec: PlatformSpec,
    jobs: ModelJobs,
    by_preemptor: dict[str, list[Victim]],
) -> Verdict:
    model = spec.models[jobs.model]
    victims = [v for uid in jobs.jobs for v in by_preemptor.get(uid, [])]
    tasks = model_tasks(session, jobs)
    if not tasks:
        return Verdict(model.name, FITS, reason="scaled to zero")
    if runs(session, jobs):
        headroom = reasons.queue_headroom(session, model.queue, spec.gpu_resource)
        return Verdict(
            model.name,
            EVICTS if victims else FITS,
            domain_of(session, {t.node for t in tasks}),
            victims,
            headroom=headroom,
            note=waking_note(model),
            replicas=replica_nodes(tasks),
        )
    if empty is not None and not runs(empty[0], empty[1][model.name]):
        alone = empty[0]
        stuck = next(
            alone.jobs[u]
            for u in empty[1][model.name].jobs
            if u in alone.jobs and not all(t.status == RUNNING for t in alone.jobs[u].tasks)
        )
        return _not_running(model, NEVER, victims, reasons.reason_for(alone, stuck, model, spec, empty=True))
    wanted = set(jobs.tasks)
    stuck = next(
        j for u in jobs.jobs if (j := session.jobs[u]) and any(t.status != RUNNING for t in j.tasks if t.uid in wanted)
    )
    return _not_running(model, WAITS, victims, reasons.reason_for(session, stuck, model, spec, empty=False))


def _in_order(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, order: list[str], absent: set[str]
) -> set[str]:
    """Which models of `order` run when `up` creates them one at a time in that order, on the
    cluster as it is, the models `absent` not created (`whatif.races`)."""
    tiers, actions, configurations = policy_of(spec)
    session, models = build_session(state, without(spec, absent), rendered)
    session.configurations = configurations
    hold_in_order(session, Objects(), models, order)
    simulate(session, tiers, actions, cycles_in_order(MAX_CYCLES, order))
    arrive_all(session)  # a model still held when the cycles ran out does not run
    return {name for name in order if runs(session, models[name])}


def _not_running(model: ModelSpec, verdict: str, victims: list[Victim], why: reasons.Reason) -> Verdict:
    return Verdict(
        model.name,
        verdict,
        victims=victims,
        reason=f"{why.text} (`{why.key}`)",
        note=waking_note(model),
        key=why.key,
        volcano_message=why.volcano,
    )
