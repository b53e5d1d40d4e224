"""A recorded cluster for the pull-request what-if: what `whatif --from` reads, and nothing a
reviewer of the repository should not see.

The default branch's preview records it with the read-only preview identity and keeps it as a
workflow artifact; same-repository pull requests read it back, so their offline diff can say what
the scheduler will do with the change without any credential. Artifacts are readable by whoever
can read the repository, so the snapshot leaves out what the what-if never reads and a workload
may hold in plain text: container commands, arguments and environment, field managers and the
last-applied annotation (a copy of the whole object as applied).
"""

from __future__ import annotations

import copy
from typing import Any

from live.cluster_state import KINDS, ClusterState

SNAPSHOT_SCHEMA = "v1"
"""`apiVersion` of the List written: kubectl's own, so `--from` and kubectl read it alike."""
LEFT_OUT_CONTAINER_FIELDS = ("command", "args", "env", "envFrom")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def snapshot_list(state: ClusterState) -> dict[str, Any]:
    """Every object of the state as a Kubernetes `List`, with the fields above left out."""
    items = [_trimmed(obj) for kind in KINDS for obj in getattr(state, kind.key)]
    return {"apiVersion": SNAPSHOT_SCHEMA, "kind": "List", "items": items}


def _trimmed(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    for pod_spec in _pod_specs(out):
        for key in ("containers", "initContainers"):
            for container in pod_spec.get(key) or []:
                if isinstance(container, dict):
                    for name in LEFT_OUT_CONTAINER_FIELDS:
                        container.pop(name, None)
    return out


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod specs an object holds: a Pod's own, a Deployment's template, a LeaderWorkerSet's
    leader and worker templates."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if obj.get("kind") == "Pod":
        return [spec]
    templates = [spec.get("template")]
    group = spec.get("leaderWorkerTemplate")
    if isinstance(group, dict):
        templates += [group.get("leaderTemplate"), group.get("workerTemplate")]
    return [t["spec"] for t in templates if isinstance(t, dict) and isinstance(t.get("spec"), dict)]
