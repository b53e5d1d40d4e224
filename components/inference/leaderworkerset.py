"""The LeaderWorkerSet of a multi-node model (pure): one group of pods (a Ray cluster) per replica."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import replicas_field, workload_metadata
from components.inference.pod_template import pod_template
from config.spec.model import ModelSpec
from config.upstream.kubernetes import WAIT_FOR_ANNOTATION
from config.upstream.lws import LWS_API_VERSION, LWS_AVAILABLE
from config.upstream.volcano import QUEUE_ANNOTATION


def leaderworkerset_manifest(model: ModelSpec) -> dict[str, Any]:
    """Every field the LWS webhook or CRD would default is spelled out, so previews show no
    phantom diffs."""
    cfg = model.config
    metadata = workload_metadata(model)
    metadata["name"] = model.workload_name
    # `pulumi up` waits until every group runs (LWS sets `Available` once every replica's pods are
    # ready: sigs.k8s.io/lws pkg/controllers/leaderworkerset_controller.go), so a gang Volcano cannot
    # place fails the update, naming the LeaderWorkerSet, instead of leaving it green and Pending.
    metadata["annotations"] = {**metadata.get("annotations", {}), WAIT_FOR_ANNOTATION: LWS_AVAILABLE}
    if not model.own_pod_group:
        # LWS gang scheduling reads the queue from the LeaderWorkerSet itself.
        metadata["annotations"][QUEUE_ANNOTATION] = model.queue
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": metadata,
        "spec": {
            **replicas_field(model),
            "leaderWorkerTemplate": _templates(model),
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {
                    "maxUnavailable": cfg.rollout.max_unavailable,
                    "maxSurge": cfg.rollout.max_surge,
                    "partition": 0,
                },
            },
            # LeaderReady would deadlock: the leader waits for workers created only once it is Ready.
            "startupPolicy": "LeaderCreated",
            "networkConfig": {"subdomainPolicy": "Shared"},
        },
    }


def _templates(model: ModelSpec) -> dict[str, Any]:
    """A Ray leader and its workers; an instance of one pod (a role of a slice) is a server alone."""
    size = model.config.nodes_per_replica
    if size == 1:
        return {
            "size": 1,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "workerTemplate": pod_template(model, "server"),
        }
    return {
        "size": size,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": pod_template(model, "leader"),
        "workerTemplate": pod_template(model, "worker"),
    }
