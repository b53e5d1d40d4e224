"""The work a cluster runs once a stack is applied: its running pods, and each model's pods and
PodGroups as the render makes them. See `whatif.cluster` for how each piece is read."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from config.platform_labels import MANAGED_BY, MODEL_LABEL
from config.schema.quantity import quantity_value
from config.spec.gateway import scales_from_zero
from config.spec.model import ModelSpec, slice_group_name
from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL, lws_labels
from config.upstream.volcano import GROUP_NAME_ANNOTATION
from live.cluster_state import ClusterState
from offline.manifests import Rendered
from whatif.cluster import (
    ModelJobs,
    PriorityValues,
    _hypernodes,
    _nodes,
    _priority_classes,
    _queue,
    _queues,
    _task,
    by_creation,
    hold_arrivals,
    pod_group_job,
    pod_request,
    with_stack_labels,
)
from whatif.names import domain_names
from whatif.scheduler.model import Job
from whatif.scheduler.resources import add
from whatif.scheduler.session import Session

MANAGED_KEY, MANAGED_VALUE = next(iter(MANAGED_BY.items()))
FINISHED = ("Succeeded", "Failed")


@dataclass
class Objects:
    """A session's pods and PodGroups as objects for Volcano's code: the dump's, and those `up` would make."""

    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Task uid (namespace/name) -> pod."""
    pod_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Job uid (namespace/name) -> PodGroup."""
    other_pods: list[dict[str, Any]] = field(default_factory=list)
    """Pods outside any PodGroup that hold a node."""
    nodes: list[dict[str, Any]] = field(default_factory=list)
    """The nodes with the labels the stack sets (`cluster.with_stack_labels`)."""
    arrivals: set[str] = field(default_factory=set)
    """Task uids of `pods` that arrive only once the cluster has settled (`Session.arrivals`)."""
    waves: list[tuple[list[str], list[str]]] = field(default_factory=list)
    """(job uids, task uids) of each wave that arrives whole after `arrivals` (`races.hold_in_order`)."""


Index = dict[tuple[str, str | None, str], dict[str, Any]]
"""Rendered objects (patches left out) by (kind, namespace, name)."""


def rendered_index(rendered: Rendered) -> Index:
    return {(o.kind, o.namespace, o.name): o.manifest for o in rendered.objects if not o.patch}


def pod_templates(model: ModelSpec, rendered: Index) -> tuple[list[dict[str, Any]], int, int] | None:
    """(pod templates of one replica, replicas, pods per replica) of the rendered workload. A model
    that sleeps at zero replicas counts as awake at its maximum: at zero it would always "fit", and
    what the reader needs is whether it can wake."""
    for kind in ("Deployment", "LeaderWorkerSet"):
        manifest = rendered.get((kind, model.namespace, model.name))
        if manifest is None:
            continue
        spec = manifest.get("spec") or {}
        replicas = int(spec.get("replicas", model.config.replicas))
        if scales_from_zero(model):
            replicas = model.config.planned_replicas
        if kind == "Deployment":
            return [spec.get("template") or {}], replicas, 1
        templates = lws_templates(manifest)
        return templates, replicas, len(templates)
    return None


def lws_templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod template of each position of one LeaderWorkerSet group: the leader's (the worker's
    when the LWS gives none), then the workers'."""
    lws = (manifest.get("spec") or {}).get("leaderWorkerTemplate") or {}
    worker = lws.get("workerTemplate") or {}
    return [lws.get("leaderTemplate") or worker] + [worker] * (int(lws.get("size", 1)) - 1)


def waking_note(model: ModelSpec) -> str:
    """What a verdict of a model that sleeps at zero is about."""
    if not scales_from_zero(model):
        return ""
    return f"sleeps at zero replicas; judged awake at its maximum ({model.config.planned_replicas})"


def _new_pod(model: ModelSpec, template: dict[str, Any], name: str, labels: dict[str, str]) -> dict[str, Any]:
    metadata = template.get("metadata") or {}
    return {
        "metadata": {
            "name": name,
            "namespace": model.namespace,
            "labels": {**(metadata.get("labels") or {}), **labels},
            "annotations": dict(metadata.get("annotations") or {}),
        },
        "spec": template.get("spec") or {},
        "status": {"phase": "Pending"},
    }


def build_session(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, only: set[str] | None = None
) -> tuple[Session, dict[str, ModelJobs]]:
    """The session after the change; `only`: those models alone on the cluster's nodes, nothing else running."""
    session, models, _ = build_world(state, spec, rendered, only)
    return session, models


def build_world(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, only: set[str] | None = None
) -> tuple[Session, dict[str, ModelJobs], Objects]:
    """`build_session`, and the same pods and PodGroups as objects, on the nodes as the stack labels them."""
    state = with_stack_labels(state, rendered)
    objects = Objects(nodes=state.nodes)
    priorities, default = _priority_classes(state, rendered)
    queues = _queues(state, rendered)
    for patch in (o for o in rendered.objects if o.patch and o.kind == "Queue"):
        current = next(
            (q for q in state.queues if q["metadata"]["name"] == patch.name), {"metadata": {"name": patch.name}}
        )
        merged = {**current, "spec": {**(current.get("spec") or {}), **(patch.manifest.get("spec") or {})}}
        queues[patch.name] = _queue(merged, queues[patch.name].state if patch.name in queues else "Open", 0)
    nodes = _nodes(state)
    jobs: dict[str, Job] = {}
    for order, obj in enumerate(by_creation(state.pod_groups, "PodGroup")):
        job = pod_group_job(obj, priorities, default, order)
        jobs[job.uid] = job
        objects.pod_groups[job.uid] = obj
    models = {name: ModelJobs(name) for name in spec.models if only is None or name in only}
    existing: dict[str, list[dict[str, Any]]] = {name: [] for name in spec.models}
    if only is not None:
        jobs = {}
    removed_groups: set[str] = set()
    for order, pod in enumerate(by_creation(state.pods, "Pod")):
        metadata = pod["metadata"]
        if (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        labels = metadata.get("labels") or {}
        annotations = metadata.get("annotations") or {}
        namespace = metadata.get("namespace", "default")
        group = annotations.get(GROUP_NAME_ANNOTATION)
        if labels.get(MANAGED_KEY) == MANAGED_VALUE and MODEL_LABEL in labels:
            name = labels[MODEL_LABEL]
            if name in spec.models and spec.models[name].namespace == namespace:
                existing[name].append(pod)
                if group:
                    removed_groups.add(f"{namespace}/{group}")
                continue
            if name not in spec.models:  # the change deletes it
                if group:
                    removed_groups.add(f"{namespace}/{group}")
                continue
        owner = jobs.get(f"{namespace}/{group}") if group else None
        node_name = (pod.get("spec") or {}).get("nodeName")
        if owner is None:
            if node_name in nodes:  # not Volcano's: it holds its node all the same
                node = nodes[node_name]
                add(node.used, pod_request(pod.get("spec") or {}))
                node.other_pods += 1
                node.refresh()
                objects.other_pods.append(pod)
            continue
        task = _task(pod, owner.uid, priorities, default, order)
        owner.tasks.append(task)
        objects.pods[task.uid] = pod
    for uid in removed_groups:
        jobs.pop(uid, None)
    order = len(state.pods)
    index = rendered_index(rendered)
    live = {f"{g['metadata'].get('namespace')}/{g['metadata']['name']}": g for g in state.pod_groups}
    for name, model in spec.models.items():
        if only is not None and name not in only:
            continue
        adder = _add_disaggregated if model.disaggregated else _add_model
        order = adder(model, index, existing[name], jobs, models[name], priorities, default, order, live, objects)
    hypernodes = _hypernodes(state, spec, rendered, nodes)
    session = Session(nodes, queues, {u: j for u, j in jobs.items() if j.queue in queues}, hypernodes)
    session.domain_names = domain_names(hypernodes, spec, nodes)
    kept = {t.uid for j in jobs.values() for t in j.tasks}
    objects.pods = {uid: pod for uid, pod in objects.pods.items() if uid in kept}
    objects.pod_groups = {uid: group for uid, group in objects.pod_groups.items() if uid in jobs}
    objects.arrivals = hold_arrivals(session, objects.pods, state.restarting_groups)
    return session, models, objects


def _group_of(pod: dict[str, Any]) -> str:
    metadata = pod["metadata"]
    return f"{metadata.get('namespace')}/{(metadata.get('annotations') or {}).get(GROUP_NAME_ANNOTATION)}"


def _model_groups(
    model: ModelSpec,
    rendered: Index,
    shape: tuple[dict[str, Any], int, int],
    keep: list[dict[str, Any]],
    live: dict[str, dict[str, Any]],
    priorities: dict[str, int],
    default: int,
    order: int,
) -> list[tuple[Job, dict[str, Any]]]:
    """The PodGroups of the model after the change (without their pods), as jobs and as objects."""
    template, replicas, size = shape
    pod_spec = template.get("spec") or {}
    request = pod_request(pod_spec)
    if size == 1:  # Volcano's controller: one PodGroup per ReplicaSet, minMember 1
        # The running pods' PodGroup keeps the name Volcano's controller gave it
        # (`podgroup-<ReplicaSet uid>`), which the pods name and a reviewer finds on the cluster.
        kept_uid = next((_group_of(p) for p in keep if _group_of(p) in live), None)
        kept = live.get(kept_uid) if kept_uid else None
        priority_class = pod_spec.get("priorityClassName")
        status = (kept or {}).get("status") or {"phase": "Pending"}
        job = Job(
            kept_uid or f"{model.namespace}/podgroup-{model.name}",
            model.queue,
            1,
            status.get("phase", "Pending"),
            priority=priorities.get(str(priority_class), default) if priority_class else default,
            min_resources=dict(request),
            order=order,
        )
        group = _controller_pod_group(job, pod_spec, status)
        return [(job, group)]
    manifest = rendered.get(("PodGroup", model.namespace, model.pod_group_name))
    if manifest is not None:
        status = (live.get(f"{model.namespace}/{model.pod_group_name}") or {}).get("status") or {}
        group = {**manifest, "status": status}
        return [(pod_group_job(group, priorities, default, order), group)]
    # LWS's own Volcano provider: one PodGroup per group, without topology or priority class.
    out = []
    for index in range(replicas):
        job = Job(
            f"{model.namespace}/{model.name}-{index}",
            model.queue,
            size,
            "Pending",
            priority=default,
            min_resources={k: v * size for k, v in request.items()},
            order=order + index,
        )
        group = _controller_pod_group(job, {}, {"phase": "Pending"})
        group["spec"]["minResources"] = _multiplied(pod_spec, size)
        out.append((job, group))
    return out


def _multiplied(pod_spec: dict[str, Any], count: int) -> dict[str, str]:
    """A pod's container requests times `count`, as quantities (what a gang of equal pods needs)."""
    total: dict[str, Decimal] = {}
    for container in pod_spec.get("containers") or []:
        for name, value in (((container.get("resources") or {}).get("requests")) or {}).items():
            total[name] = total.get(name, Decimal(0)) + quantity_value(str(value))
    return {name: format(value * count, "f") for name, value in total.items()}


def _controller_pod_group(job: Job, pod_spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """The PodGroup a controller makes for a job's pods (Volcano's for a ReplicaSet's pod, LWS's
    for a group): minMember, queue, the pod's requests and priority class."""
    namespace, name = job.uid.split("/", 1)
    spec: dict[str, Any] = {"minMember": job.min_member, "queue": job.queue}
    if pod_spec:
        spec["minResources"] = _multiplied(pod_spec, 1)
        if pod_spec.get("priorityClassName"):
            spec["priorityClassName"] = pod_spec["priorityClassName"]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": dict(status),
    }


def _add_disaggregated(
    model: ModelSpec,
    rendered: Index,
    running: list[dict[str, Any]],
    jobs: dict[str, Job],
    out: ModelJobs,
    priorities: dict[str, int],
    default: int,
    order: int,
    live: dict[str, dict[str, Any]],
    objects: Objects,
) -> int:
    """A model with prefill and decode apart: each slice's PodGroup from the render, and the pods of
    each role's LeaderWorkerSet as its controller makes them (`<lws>-<group>`, then
    `-<worker>`), the running ones kept where their slice, role, group and position still exist."""
    running_at: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pod in running:
        labels = pod["metadata"].get("labels") or {}
        if (pod.get("status") or {}).get("phase") == "Running":
            key = (labels.get(LWS_NAME_LABEL, ""), labels.get(LWS_GROUP_INDEX_LABEL, ""), pod["metadata"]["name"])
            running_at[key] = pod
    for index in range(model.config.replicas):
        group_name = slice_group_name(model.name, index)
        manifest = rendered.get(("PodGroup", model.namespace, group_name))
        if manifest is None:
            continue
        status = (live.get(f"{model.namespace}/{group_name}") or {}).get("status") or {}
        group = {**manifest, "status": status}
        job = pod_group_job(group, priorities, default, order)
        jobs[job.uid] = job
        out.jobs.append(job.uid)
        objects.pod_groups[job.uid] = group
        for view in model.role_views:
            lws_name = view.for_slice(index).workload_name
            lws = rendered.get(("LeaderWorkerSet", model.namespace, lws_name))
            if lws is None:
                continue
            templates = lws_templates(lws)
            for group_index in range(int((lws.get("spec") or {}).get("replicas", 1))):
                for position, template in enumerate(templates):
                    name = f"{lws_name}-{group_index}" + (f"-{position}" if position else "")
                    kept = running_at.get((lws_name, str(group_index), name))
                    if kept is not None and _group_of(kept) != job.uid:
                        kept = _in_group(kept, job.uid)
                    if kept is None:
                        kept = _new_pod(model, template, name, lws_labels(lws_name, group_index, position))
                        kept = _admitted(kept, job.uid, priorities, default)
                    order += 1
                    task = _task(kept, job.uid, priorities, default, order)
                    job.tasks.append(task)
                    out.tasks.append(task.uid)
                    objects.pods[task.uid] = kept
    return order + 1


def _add_model(
    model: ModelSpec,
    rendered: Index,
    running: list[dict[str, Any]],
    jobs: dict[str, Job],
    out: ModelJobs,
    priorities: dict[str, int],
    default: int,
    order: int,
    live: dict[str, dict[str, Any]],
    objects: Objects,
) -> int:
    found = pod_templates(model, rendered)
    if found is None:
        return order
    templates, replicas, size = found
    request = pod_request(templates[0].get("spec") or {})
    keep = [
        p
        for p in running
        if pod_request(p.get("spec") or {}) == request and (p.get("status") or {}).get("phase") == "Running"
    ]
    made = _model_groups(model, rendered, (templates[0], replicas, size), keep, live, priorities, default, order)
    groups = [job for job, _ in made]
    for job, group in made:
        jobs[job.uid] = job
        out.jobs.append(job.uid)
        objects.pod_groups[job.uid] = group
    slots: dict[tuple[int, int], dict[str, Any]] = {}
    for pod in keep:
        labels = pod["metadata"].get("labels") or {}
        index = int(labels.get(LWS_GROUP_INDEX_LABEL, len(slots))) if size > 1 else len(slots)
        position = sum(1 for (g, _) in slots if g == index)
        if index < replicas and position < size:
            slots[(index, position)] = pod
    for index in range(replicas):
        job = groups[index] if len(groups) > 1 else groups[0]
        for position in range(size):
            found_pod = slots.get((index, position))
            if found_pod is not None and _group_of(found_pod) != job.uid:
                # a pod of an older ReplicaSet (or group) counted in this one: named so
                found_pod = _in_group(found_pod, job.uid)
            if found_pod is None:
                labels = lws_labels(model.name, index, position) if size > 1 else {}
                suffix = f"{index}" if size == 1 else f"{index}-{position}"
                found_pod = _new_pod(model, templates[position], f"{model.name}-new-{suffix}", labels)
                found_pod = _admitted(found_pod, job.uid, priorities, default)
            order += 1
            task = _task(found_pod, job.uid, priorities, default, order)
            job.tasks.append(task)
            out.tasks.append(task.uid)
            objects.pods[task.uid] = found_pod
    return order + len(groups)


def _in_group(pod: dict[str, Any], job: str) -> dict[str, Any]:
    metadata = pod["metadata"]
    annotations = {**(metadata.get("annotations") or {}), GROUP_NAME_ANNOTATION: job.split("/", 1)[1]}
    return {**pod, "metadata": {**metadata, "annotations": annotations}}


def _admitted(pod: dict[str, Any], job: str, priorities: dict[str, int], default: int) -> dict[str, Any]:
    """A new pod as the API server stores it: priority and `preemptionPolicy: Never` from its class
    or the global default (kubernetes plugin/pkg/admission/priority/admission.go; Volcano's preempt
    then evicts nobody for it), its PodGroup named (Volcano's and LWS's controllers annotate it)."""
    spec = dict(pod["spec"])
    name = spec.get("priorityClassName")
    if spec.get("priority") is None:
        spec["priority"] = priorities.get(str(name), default) if name else default
    if isinstance(priorities, PriorityValues) and spec.get("preemptionPolicy") is None:
        resolved = str(name) if name else priorities.default_class
        if resolved in priorities.never:
            spec["preemptionPolicy"] = "Never"
    metadata = dict(pod["metadata"])
    metadata["annotations"] = {**metadata.get("annotations", {}), GROUP_NAME_ANNOTATION: job.split("/", 1)[1]}
    metadata.setdefault("uid", f"new-{metadata.get('namespace', 'default')}-{metadata['name']}")
    return {**pod, "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
