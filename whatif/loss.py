"""The cluster as it is after losing hardware, for `whatif --lose`: what the cluster itself does
when a node, a domain or some GPUs go away, applied to a snapshot so that either engine answers
what the scheduler does next.

- A lost node is gone with its pods. Kubernetes' pod garbage collector deletes the pods bound to
  a node that no longer exists (v1.35.3 `pkg/controller/podgc/gc_controller.go`, `gcOrphaned`,
  after a 40 s quarantine), and a NotReady node's pods are evicted once their `unreachable`
  toleration ends (the taint manager); either way their controllers make them again, Pending. A
  pod with a controller (a ReplicaSet, a Job, a StatefulSet) comes back as a Pending copy; a bare
  pod does not.
- A LeaderWorkerSet group that lost any pod is made again whole: the stack's groups use
  `restartPolicy: RecreateGroupOnPodRestart`, and LWS deletes the group's leader, and with it the
  group, when one of its pods goes (v0.9.0 `pkg/controllers/pod_controller.go`,
  `handleRestartPolicy`).
- Lost GPUs lower the node's `nvidia.com/gpu` (the device plugin reports the failed device
  unhealthy); the pods on it keep running, and Volcano keeps the node Ready even when what runs
  there then exceeds what it has (v1.15.1 `pkg/scheduler/api/node_info.go`, `setNodeState` only
  logs "Node out of sync"), so nothing new fits there until they end.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from config.platform_labels import MANAGED_BY, MODEL_LABEL
from config.schema.quantity import quantity_problem, quantity_value
from config.spec.platform import PlatformSpec
from config.upstream.volcano import GROUP_NAME_ANNOTATION
from live.cluster_state import ClusterState
from offline.manifests import Rendered
from whatif.cluster import _hypernodes, _nodes, lws_group, with_stack_labels
from whatif.scheduler.topology import ROOT

MANAGED_KEY, MANAGED_VALUE = next(iter(MANAGED_BY.items()))
_GPUS = re.compile(r"(\d+)@(.+)")


class LossError(ValueError):
    """A `--lose` that names nothing the cluster has, or is not written as the help says."""


@dataclass(frozen=True)
class Loss:
    kind: str
    """`node`, `domain` or `gpus`."""
    names: tuple[str, ...]
    """Nodes, the domain, or the node or pool the GPUs are taken from."""
    gpus: int = 0

    @property
    def text(self) -> str:
        if self.kind == "gpus":
            return f"gpus={self.gpus}@{self.names[0]}"
        return f"{self.kind}={','.join(self.names)}"


def parse_loss(text: str) -> Loss:
    kind, _, value = text.partition("=")
    kind, value = kind.strip(), value.strip()
    if kind == "node" and value:
        names = tuple(n.strip() for n in value.split(",") if n.strip())
        if names:
            return Loss("node", names)
    if kind == "domain" and value:
        return Loss("domain", (value,))
    if kind == "gpus":
        found = _GPUS.fullmatch(value)
        if found and int(found.group(1)) > 0:
            return Loss("gpus", (found.group(2),), int(found.group(1)))
    raise LossError(f"--lose {text!r}: write `node=<name>[,<name>...]`, `domain=<name>` or `gpus=<N>@<node or pool>`")


@dataclass
class Lost:
    """What a loss took, as the report shows it."""

    losses: list[Loss]
    nodes: list[str] = field(default_factory=list)
    """Nodes gone."""
    gpus: dict[str, int] = field(default_factory=dict)
    """Node -> GPUs it no longer has."""
    pods: dict[str, list[str]] = field(default_factory=dict)
    """Model -> its pods that were on a lost node or in a group made again."""
    other_pods: list[str] = field(default_factory=list)
    """Pods outside the stack that were lost (`namespace/name`)."""
    running: set[str] = field(default_factory=set)
    """The stack's models with a pod Running before the loss."""
    model_of_group: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, PodGroup) -> the stack's model whose pods it holds, to name a victim's model."""

    @property
    def text(self) -> str:
        return ", ".join(loss.text for loss in self.losses)


def after_loss(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, losses: list[Loss]
) -> tuple[ClusterState, Lost]:
    """The snapshot as the cluster has it once `losses` happened and its controllers reacted."""
    labelled = with_stack_labels(state, rendered)
    by_name = {n["metadata"]["name"]: n for n in labelled.nodes}
    lost = Lost(losses)
    gone: set[str] = set()
    for loss in losses:
        if loss.kind == "gpus":
            for node, count in _gpus_taken(loss, by_name, spec).items():
                lost.gpus[node] = lost.gpus.get(node, 0) + count
        else:
            gone |= _nodes_of(loss, labelled, spec, rendered, by_name)
    lost.nodes = sorted(gone)
    for pod in state.pods:
        metadata = pod["metadata"]
        model = (metadata.get("labels") or {}).get(MODEL_LABEL)
        group = (metadata.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        if model and group:
            lost.model_of_group[(metadata.get("namespace", "default"), group)] = model
        if model in spec.models and (pod.get("status") or {}).get("phase") == "Running":
            lost.running.add(model)
    nodes = [_without_gpus(n, lost.gpus.get(n["metadata"]["name"], 0), spec.gpu_resource) for n in state.nodes]
    pods, restarting = _pods_after(state.pods, gone, lost, spec)
    emptied = _replica_set_groups(state.pods, pods, spec)
    pod_groups = _phases_after(state.pod_groups, state.pods, pods, emptied, restarting)
    kept_nodes = [n for n in nodes if n["metadata"]["name"] not in gone]
    remade = {(spec.models[name].namespace, name) for name in lost.pods}
    after = replace(
        state, nodes=kept_nodes, pods=pods, pod_groups=pod_groups, restarting_groups=restarting, remade_models=remade
    )
    return after, lost


def _replica_set_groups(
    before: list[dict[str, Any]], after: list[dict[str, Any]], spec: PlatformSpec
) -> set[tuple[str, str]]:
    """The PodGroups Volcano's controller made for the ReplicaSets of the stack's single-node
    models that the loss left without a pod: the what-if makes the model's PodGroup again with
    the pods its Deployment makes (`whatif.workload`), so the empty one goes."""

    def groups(pods: list[dict[str, Any]]) -> set[tuple[str, str]]:
        out = set()
        for pod in pods:
            metadata = pod["metadata"]
            labels = metadata.get("labels") or {}
            group = (metadata.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if group and labels.get(MODEL_LABEL) in spec.models and lws_group(pod) is None:
                out.add((metadata.get("namespace", "default"), group))
        return out

    return groups(before) - groups(after)


def _phases_after(
    pod_groups: list[dict[str, Any]],
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    emptied: set[tuple[str, str]],
    restarting: set[tuple[str, str, str]],
) -> list[dict[str, Any]]:
    """A PodGroup that lost pods and has fewer than `minMember` left on nodes is Pending again: the
    scheduler's next session sets it so (v1.15.1 `framework/session.go` `getPodGroupPhase`), and it
    must be admitted again (enqueue) before its pods are placed, behind the PodGroups already
    admitted. `emptied` ones go (`_replica_set_groups`). The PodGroup of a LeaderWorkerSet group
    being made again keeps its phase: its pods arrive later, and the first session without them
    sets it, after placing what waited (`cluster.hold_arrivals`)."""

    def scheduled(pods: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
        finished = ("Failed", "Succeeded")
        return Counter(
            _pod_group_of(p)
            for p in pods
            if _pod_group_of(p)[1]
            and (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase") not in finished
        )

    was, now = scheduled(before), scheduled(after)
    arriving = {_pod_group_of(p) for p in before if lws_group(p) in restarting}
    out = []
    for group in pod_groups:
        key = (group["metadata"].get("namespace", "default"), group["metadata"]["name"])
        if key in emptied:
            continue
        phase = (group.get("status") or {}).get("phase")
        minimum = int((group.get("spec") or {}).get("minMember") or 1)
        if now[key] < was[key] and now[key] < minimum and phase in ("Running", "Unknown") and key not in arriving:
            group = {**group, "status": {**(group.get("status") or {}), "phase": "Pending"}}
        out.append(group)
    return out


def _pod_group_of(pod: dict[str, Any]) -> tuple[str, str]:
    metadata = pod["metadata"]
    return metadata.get("namespace", "default"), (metadata.get("annotations") or {}).get(GROUP_NAME_ANNOTATION, "")


def _nodes_of(
    loss: Loss, state: ClusterState, spec: PlatformSpec, rendered: Rendered, by_name: dict[str, dict[str, Any]]
) -> set[str]:
    if loss.kind == "node":
        for name in loss.names:
            if name not in by_name:
                raise LossError(f"--lose {loss.text}: the cluster has no node {name!r}{_close(name, by_name)}")
        return set(loss.names)
    name = loss.names[0]
    named = spec.topology.nodes_below_named if spec.topology is not None else {}
    if name in named:
        return set(named[name]) & set(by_name)
    hypernodes = {h: n.nodes for h, n in _hypernodes(state, spec, rendered, _nodes(state)).items() if h != ROOT}
    if name in hypernodes:
        return set(hypernodes[name])
    raise LossError(
        f"--lose {loss.text}: no domain of the stack's topology and no HyperNode is named {name!r}"
        f"{_close(name, [*named, *hypernodes])}"
    )


def _gpus_taken(loss: Loss, by_name: dict[str, dict[str, Any]], spec: PlatformSpec) -> dict[str, int]:
    """`N` GPUs of one node, or of a pool one per node in name order (failures of separate devices
    land on separate hosts), never more than a node has."""
    where = loss.names[0]
    gpu = spec.gpu_resource
    if where in by_name:
        members = [where]
    elif where in spec.pools:
        selector = spec.pools[where].config.selector
        members = sorted(
            name
            for name, node in by_name.items()
            if all((node["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        )
    else:
        raise LossError(
            f"--lose {loss.text}: the cluster has no node and the stack no pool named {where!r}"
            f"{_close(where, [*by_name, *spec.pools])}"
        )
    have = {name: _count((by_name[name].get("status") or {}).get("allocatable"), gpu) for name in members}
    if sum(have.values()) < loss.gpus:
        raise LossError(f"--lose {loss.text}: {where} has {sum(have.values())} {gpu}, fewer than {loss.gpus}")
    taken: dict[str, int] = {}
    left = loss.gpus
    while left:
        for name in members:
            if left and taken.get(name, 0) < have[name]:
                taken[name] = taken.get(name, 0) + 1
                left -= 1
    return taken


def _count(resources: dict[str, Any] | None, gpu: str) -> int:
    """Whole devices of a node's resource list; a quantity the API server would refuse is none."""
    text = str((resources or {}).get(gpu, "0"))
    return int(quantity_value(text)) if quantity_problem(text) is None else 0


def _without_gpus(node: dict[str, Any], count: int, gpu: str) -> dict[str, Any]:
    if not count:
        return node
    status = dict(node.get("status") or {})
    for part in ("allocatable", "capacity"):
        if gpu in (status.get(part) or {}):
            status[part] = {**status[part], gpu: str(max(0, _count(status[part], gpu) - count))}
    return {**node, "status": status}


def _pods_after(
    pods: list[dict[str, Any]], gone: set[str], lost: Lost, spec: PlatformSpec
) -> tuple[list[dict[str, Any]], set[tuple[str, str, str]]]:
    """The pods once the lost nodes' pods are deleted and their controllers made them again, and
    the LeaderWorkerSet groups being made again whole."""
    groups = {
        group for p in pods if (p.get("spec") or {}).get("nodeName") in gone and (group := lws_group(p)) is not None
    }
    out: list[dict[str, Any]] = []
    for pod in pods:
        on_lost_node = (pod.get("spec") or {}).get("nodeName") in gone
        if not on_lost_node and (lws_group(pod) not in groups or lws_group(pod) is None):
            out.append(pod)
            continue
        metadata = pod["metadata"]
        labels = metadata.get("labels") or {}
        model = spec.models.get(labels.get(MODEL_LABEL, ""))
        if labels.get(MANAGED_KEY) == MANAGED_VALUE and model and model.namespace == metadata.get("namespace"):
            # the stack's own: the what-if makes the model's missing pods as its controller would
            lost.pods.setdefault(labels[MODEL_LABEL], []).append(metadata["name"])
            continue
        lost.other_pods.append(f"{metadata.get('namespace', 'default')}/{metadata['name']}")
        if any(ref.get("controller") for ref in metadata.get("ownerReferences") or []):
            out.append(_made_again(pod))
    return out, groups


def _made_again(pod: dict[str, Any]) -> dict[str, Any]:
    """The Pending pod a controller makes in place of a lost one: the same template, no node."""
    metadata = dict(pod["metadata"])
    metadata["name"] = f"{metadata['name']}-again"
    metadata["uid"] = f"again-{metadata.get('uid', metadata['name'])}"
    metadata.pop("deletionTimestamp", None)
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    return {**pod, "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


def _close(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
