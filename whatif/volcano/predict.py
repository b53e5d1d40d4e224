"""The what-if answered by Volcano's own scheduling code.

The cluster as `pulumi up` would leave it (the dump's objects, the stack's Queues, PriorityClasses
and HyperNodes, each model's pods and PodGroups as the controllers make them: `workload.build_world`)
goes to `volcano-session`, which runs the stack's rendered scheduler configuration cycle after
cycle until nothing changes. Its outcome decides each model's verdict and its victims; a model
that does not run is tried again alone on the same nodes, as the model does, to tell `waits` from
`never`. The reasons stay the model's, read on the cluster as Volcano left it; asked to compare
(`compare=True`), the verdicts where the model would have answered differently say so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

from components.scheduling.volcano_values import scheduler_conf_text
from config.spec.platform import PlatformSpec
from config.upstream.volcano import VOLCANO_DEFAULT_SCHEDULER_CONF
from live.cluster_state import ClusterState
from offline.manifests import Rendered
from whatif.cluster import ModelJobs, arrive_all
from whatif.hypernodes import after_up
from whatif.predict import (
    MAX_CYCLES,
    Prediction,
    Verdict,
    Victim,
    idle_cluster,
    on_an_empty_cluster,
    policy_of,
    policy_text,
    predict,
    runs,
    tenant_exposure,
    verdict_of,
    victims_by_preemptor,
)
from whatif.races import cycles_in_order, hold_in_order, look_for_races, without
from whatif.scheduler.engine import ACTIONS, open_session
from whatif.scheduler.model import PENDING, RUNNING
from whatif.scheduler.session import Session
from whatif.scheduler.topology import ROOT
from whatif.volcano.build import ensure_built
from whatif.volcano.runner import EngineError, run_cases
from whatif.workload import Objects, build_world, waking_note

REPEAT = 3
"""Runs of each question: Volcano breaks ties between equal nodes and HyperNodes at random
(`SelectBestNodeAndScore`, `SelectBestHyperNode` in pkg/scheduler/util/scheduler_helper.go)."""
TIE_CHECK_OBJECTS = 20_000
"""Objects (nodes, pods, PodGroups, ...) up to which the question is run `REPEAT` times."""
V1BETA1 = "scheduling.volcano.sh/v1beta1"

Run = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
"""`run_cases` with the build of `volcano-session` that answers."""


def cluster_objects(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, objects: Objects
) -> list[dict[str, Any]]:
    """Every object the scheduler reads after the change."""
    classes = {o["metadata"]["name"]: o for o in state.priority_classes}
    classes.update({o.name: o.manifest for o in rendered.by_kind("PriorityClass")})
    later = {uid for jobs, tasks in objects.waves for uid in (*jobs, *tasks)}
    held = objects.arrivals | later
    return [
        *objects.nodes,
        *classes.values(),
        *queue_objects(state, rendered),
        *after_up(state, spec, rendered, (_name_and_labels(n) for n in objects.nodes)),
        *(group for uid, group in objects.pod_groups.items() if uid not in later),
        *(with_uid(without_claims(p)) for uid, p in objects.pods.items() if uid not in held),
        *(with_uid(p) for p in objects.other_pods),
    ]


def arrival_objects(objects: Objects) -> list[dict[str, Any]]:
    """The pods that arrive once the cluster has settled (`Objects.arrivals`)."""
    return [with_uid(without_claims(objects.pods[uid])) for uid in sorted(objects.arrivals)]


def wave_objects(objects: Objects) -> list[list[dict[str, Any]]]:
    """The PodGroups and pods of each wave that arrives after them (`Objects.waves`)."""
    return [
        [*(objects.pod_groups[uid] for uid in jobs), *(with_uid(without_claims(objects.pods[uid])) for uid in tasks)]
        for jobs, tasks in objects.waves
    ]


def _name_and_labels(node: dict[str, Any]) -> tuple[str, dict[str, str]]:
    return node["metadata"]["name"], node["metadata"].get("labels") or {}


def with_uid(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod with a UID. The API server gives every pod one, so a `kubectl get` dump has it;
    a hand-written dump may not, and Volcano keys a pod by it (`predicates.go`, the cache's task
    ids), so pods without one would be taken for each other. `<namespace>-<name>` as Volcano's
    test helper names them (`BuildPod`, pkg/scheduler/util/test_utils.go)."""
    metadata = pod.get("metadata") or {}
    if metadata.get("uid"):
        return pod
    uid = f"{metadata.get('namespace', 'default')}-{metadata.get('name', '')}"
    return {**pod, "metadata": {**metadata, "uid": uid}}


CLAIMS = ("persistentVolumeClaim", "ephemeral")


def without_claims(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod without its volume claims. A dump holds no PersistentVolumeClaims, and Volcano's
    cache holds a pod whose claim it cannot find until the claim appears (`addPod`,
    pkg/scheduler/cache/event_handlers.go), so every such pod would look unschedulable; volumes are
    outside the what-if, as the report says."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    if not any(key in volume for volume in volumes for key in CLAIMS):
        return pod
    kept = [v for v in volumes if not any(key in v for key in CLAIMS)]
    return {**pod, "spec": {**pod["spec"], "volumes": kept}}


def queue_objects(state: ClusterState, rendered: Rendered) -> list[dict[str, Any]]:
    """The dump's Queues with the stack's over them (a new Queue is opened by Volcano's controller),
    patches merged, and the `root` and `default` Queues the scheduler creates at start where the
    dump has none (`newDefaultAndRootQueue`, pkg/scheduler/cache/cache.go: root not reclaimable)."""
    live = {q["metadata"]["name"]: q for q in state.queues}
    out = dict(live)
    for name, reclaimable in (("root", False), ("default", True)):
        out.setdefault(
            name,
            {
                "apiVersion": V1BETA1,
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": 1, "reclaimable": reclaimable},
                "status": {"state": "Open"},
            },
        )
    for queue in rendered.by_kind("Queue"):
        current = ((live.get(queue.name) or {}).get("status") or {}).get("state", "Open")
        out[queue.name] = {**queue.manifest, "status": {"state": current}}
    for patch in (o for o in rendered.objects if o.patch and o.kind == "Queue"):
        current = out.get(patch.name, {"apiVersion": V1BETA1, "kind": "Queue", "metadata": {"name": patch.name}})
        out[patch.name] = {**current, "spec": {**(current.get("spec") or {}), **(patch.manifest.get("spec") or {})}}
    return list(out.values())


def _case(
    case_id: str,
    objects: list[dict[str, Any]],
    conf: str,
    repeat: int,
    cycles: int = MAX_CYCLES,
    arrivals: list[dict[str, Any]] | None = None,
    waves: list[list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    case = {"id": case_id, "conf": conf, "defaults": True, "objects": objects, "cycles": cycles, "repeat": repeat}
    later = {"arrivals": arrivals, "waves": waves}
    return {**case, **{key: value for key, value in later.items() if value}}


def _settle_to(session: Session, outcome: dict[str, Any]) -> None:
    """The model's session as Volcano left the cluster: each pod where it ended, each PodGroup's
    phase, and its Unschedulable message of the last cycle as the scheduler's last word on it."""
    arrive_all(session)  # Volcano's outcome has the held pods too
    placed = outcome["pods"]
    session.unschedulable = dict(outcome["cycles"][-1].get("conditions") or {})
    for job in session.jobs.values():  # what the queues' shares are counted from (`_inqueue_of`)
        job.phase = outcome["phases"].get(job.uid, job.phase)
    for job in session.jobs.values():
        for task in job.tasks:
            node = placed.get(task.uid, "")
            if task.status == "Releasing" or (node == task.node and task.status == RUNNING):
                continue
            session.set_status(task, RUNNING, node) if node else session.set_status(task, PENDING)


def _evicted(session: Session, outcome: dict[str, Any]) -> dict[str, list[str]]:
    """Each eviction as victim -> [action, preemptor job, node]. The preemptor is the job Volcano
    pipelined onto the victim's node in that cycle (preempt and reclaim pipeline the pods they
    make room for: pkg/scheduler/actions/preempt/preempt.go, reclaim/reclaim.go), else the job
    bound there in the next cycle; preempt within a queue, reclaim across queues."""
    queue_of = {t.uid: j.queue for j in session.jobs.values() for t in j.tasks}
    job_queue = {j.uid: j.queue for j in session.jobs.values()}
    out: dict[str, list[str]] = {}
    cycles = outcome["cycles"]
    for index, cycle in enumerate(cycles):
        onto: dict[str, str] = {}
        for job, nodes in cycle["pipelined"].items():
            for node in nodes:
                onto.setdefault(node, job)
        if index + 1 < len(cycles):
            job_of = {t.uid: j.uid for j in session.jobs.values() for t in j.tasks}
            for pod, node in cycles[index + 1]["binds"].items():
                onto.setdefault(node, job_of.get(pod, ""))
        for victim in cycle["evictions"]:
            node = cycle["evictedFrom"].get(victim, "")
            preemptor = onto.get(node, "")
            same = job_queue.get(preemptor) == queue_of.get(victim)
            out.setdefault(victim, ["preempt" if same else "reclaim", preemptor, node])
    return out


def _majority(answer: dict[str, Any]) -> dict[str, Any]:
    if answer.get("error"):
        raise EngineError(f"volcano-session could not answer: {answer['error']}")
    return max(answer["outcomes"], key=lambda o: o["runs"])


def predict_with_volcano(
    state: ClusterState,
    spec: PlatformSpec,
    rendered: Rendered,
    repeat: int | None = None,
    *,
    compare: bool = False,
    release: str | None = None,
) -> Prediction:
    """Volcano's answer. `repeat`: runs of the question (default `repeats_for` the cluster's size);
    `compare`: also answer with the model and note each verdict where it differs (the tests and
    the benchmark do; a user's answer does not wait for a second engine); `release`: the Volcano
    release whose code answers (`whatif --upgrade`; default the pinned one), which takes the stack's
    scheduler configuration as its binary would: one it cannot read leaves it on its defaults."""
    binary = ensure_built(release=release) if release else None
    run = partial(run_cases, binary=binary)
    tiers, actions, configurations = policy_of(spec)
    conf = scheduler_conf_text(spec)
    session, models, objects = build_world(state, spec, rendered)
    session.configurations = configurations
    not_modelled = open_session(session, tiers) + [a for a in actions if a not in ACTIONS]
    tenants = tenant_exposure(session, spec)
    session.hypernodes.pop(ROOT, None)
    world = cluster_objects(state, spec, rendered, objects)
    runs_ = repeat if repeat is not None else repeats_for(world)
    case = _case("change", world, conf, runs_, arrivals=arrival_objects(objects))
    answer = run([{**case, "fallback": bool(release)}])[0]
    if answer.get("policyRefused"):
        conf = VOLCANO_DEFAULT_SCHEDULER_CONF  # what the release then runs, for the questions that follow
    del world
    outcome = _majority(answer)
    arrive_all(session)  # Volcano's outcome has the held pods too
    evicted = _evicted(session, outcome)
    _settle_to(session, outcome)
    stuck = [name for name in spec.models if not runs(session, models[name])]
    empty = on_an_empty_cluster(
        stuck, lambda names: _alone(run, state, spec, rendered, names, conf, configurations, tiers, runs_)
    )
    open_session(session, tiers)  # the plugins' view of the cluster as Volcano left it, for reasons
    by_preemptor = victims_by_preemptor(session, evicted, spec.gpu_resource)
    verdicts = [verdict_of(session, empty.get(name), spec, models[name], by_preemptor) for name in spec.models]
    for verdict in verdicts:
        phases = [outcome["phases"].get(job, "Pending") for job in models[verdict.model].jobs]
        verdict.admitted = "Pending" not in phases
        verdict.pod_groups = list(models[verdict.model].jobs)
    session.hypernodes.pop(ROOT, None)
    modelled = predict(state, spec, rendered).verdicts if compare else []
    _notes(verdicts, modelled, _undecided(session, models, answer), spec)
    look_for_races(verdicts, state, spec, session, models, empty, partial(_in_order, run, state, spec, rendered, conf))
    return Prediction(
        spec.stack,
        state.source,
        policy_text(tiers, actions),
        verdicts,
        tenants,
        sorted(set(not_modelled)),
        engine="volcano",
        ties_tried=runs_ > 1,
        policy_refused=answer.get("policyRefused", ""),
    )


def settle_with_volcano(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, cycles: int = MAX_CYCLES
) -> tuple[Session, dict[str, ModelJobs]]:
    """The cluster as Volcano's code leaves it after `cycles` sessions of the stack on `state`: every
    pod where it ended, Pending where it was evicted or never placed (`bench/whatif.py
    --settled-by volcano`; at 10,000 nodes its reclaim can still be going on after them)."""
    session, models, objects = build_world(state, spec, rendered)
    world = cluster_objects(state, spec, rendered, objects)
    answer = run_cases([_case("settle", world, scheduler_conf_text(spec), 1, cycles, arrival_objects(objects))])[0]
    _settle_to(session, _majority(answer))
    return session, models


def repeats_for(objects: list[dict[str, Any]]) -> int:
    """`REPEAT` runs, or one where the cluster is so large that each run takes long (Volcano's
    sessions grow with nodes, pods and queues; `bench/results.md` has the figures)."""
    return REPEAT if len(objects) <= TIE_CHECK_OBJECTS else 1


def _alone(
    run: Run,
    state: ClusterState,
    spec: PlatformSpec,
    rendered: Rendered,
    names: list[str],
    conf: str,
    configurations: dict[str, dict[str, Any]],
    tiers: list[list[dict[str, Any]]],
    repeat: int,
) -> tuple[Session, dict[str, ModelJobs]]:
    """The models `names` on the cluster's nodes with nothing else running (`predict.on_an_empty_cluster`)."""
    idle = idle_cluster(state)
    alone, models, objects = build_world(idle, spec, rendered, only=set(names))
    alone.configurations = configurations
    # One cycle: with nothing running there is nothing to evict, so the first session's enqueue and
    # allocate place all that can be placed, and a second would only try the rest again.
    answer = run([_case("alone", cluster_objects(idle, spec, rendered, objects), conf, repeat, cycles=1)])[0]
    _settle_to(alone, _majority(answer))
    open_session(alone, tiers)
    alone.hypernodes.pop(ROOT, None)
    return alone, models


def _in_order(
    run: Run, state: ClusterState, spec: PlatformSpec, rendered: Rendered, conf: str, order: list[str], absent: set[str]
) -> set[str]:
    """Which models of `order` run when `up` creates them one at a time in that order, the models
    `absent` not created (`whatif.races`); one run."""
    first, models, objects = build_world(state, without(spec, absent), rendered)
    hold_in_order(first, objects, models, order)
    world = cluster_objects(state, spec, rendered, objects)
    cycles = cycles_in_order(MAX_CYCLES, order)
    answer = run([_case("in-order", world, conf, 1, cycles, arrival_objects(objects), wave_objects(objects))])[0]
    _settle_to(first, _majority(answer))
    return {name for name in order if runs(first, models[name])}


def _undecided(session: Session, models: dict[str, ModelJobs], answer: dict[str, Any]) -> set[str]:
    """Models whose pods run in some of Volcano's repeats and not in others."""
    if not answer.get("random"):
        return set()
    out = set()
    for name, jobs in models.items():
        wanted = set(jobs.tasks)
        seen = {all(o["pods"].get(uid) for uid in wanted) for o in answer["outcomes"]}
        if len(seen) > 1:
            out.add(name)
    return out


def _notes(verdicts: list[Verdict], modelled: list[Verdict], undecided: set[str], spec: PlatformSpec) -> None:
    by_model = {v.model: v for v in modelled}
    for verdict in verdicts:
        notes = [note] if (note := waking_note(spec.models[verdict.model])) else []
        if verdict.model in undecided:
            notes.append("Volcano decides this by a random tie between equal nodes: it runs in some of its runs only")
        other = by_model.get(verdict.model)
        if other is not None and other.verdict != verdict.verdict:
            notes.append(f"the model says {other.verdict}" + (f" ({other.reason})" if other.reason else ""))
        elif other is not None and Counter(map(_shape, other.victims)) != Counter(map(_shape, verdict.victims)):
            notes.append("the model names other victims: " + (", ".join(_victim_names(other)) or "none"))
        verdict.note = "; ".join(notes)


def _shape(victim: Victim) -> tuple[str, int, float, str]:
    """What tells victims apart for a reviewer; PodGroups alike in all of it are interchangeable:
    which of them goes, and in which of equal domains, is Volcano's order among equals or a random
    tie (`SelectBestHyperNode`, pkg/scheduler/util/scheduler_helper.go)."""
    return (victim.queue, victim.priority, victim.gpus, victim.action)


def _victim_names(verdict: Verdict) -> list[str]:
    return [f"{v.namespace}/{v.pod_group}" for v in verdict.victims]
