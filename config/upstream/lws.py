"""Names and limits of LeaderWorkerSet v0.10."""

from __future__ import annotations

from typing import Final

LWS_CHART: Final = "oci://registry.k8s.io/lws/charts/lws"
# The published chart pins the manager image to `registry.k8s.io/lws/lws:v<chart version>`.
LWS_IMAGE_REPOSITORY: Final = "registry.k8s.io/lws/lws"
LWS_IMAGE_PATH: Final = "lws/lws"  # the same image under a mirror
LWS_DEFAULT_VERSION: Final = "0.10.0"
# The CRD conversion webhook hard-codes this namespace.
LWS_NAMESPACE: Final = "lws-system"
LWS_RELEASE: Final = "lws"
LWS_API_VERSION: Final = "leaderworkerset.x-k8s.io/v1"
# The condition LWS sets once every replica's pods are ready (its controller's
# `LeaderWorkerSetAvailable`, api/leaderworkerset/v1/leaderworkerset_types.go), as the provider's
# await reads it.
LWS_AVAILABLE: Final = "condition=Available"
LWS_NAME_LABEL: Final = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL: Final = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_GROUP_INDEX_LABEL: Final = "leaderworkerset.sigs.k8s.io/group-index"
# Kept well under 63 so that StatefulSet and revision names derived from it stay valid.
LWS_NAME_MAX: Final = 40


def lws_labels(name: str, group: int, position: int) -> dict[str, str]:
    """The labels LWS gives a pod of a group (`pkg/controllers`: the leader is worker 0)."""
    return {LWS_NAME_LABEL: name, LWS_GROUP_INDEX_LABEL: str(group), LWS_WORKER_INDEX_LABEL: str(position)}
