"""What a pool's network profile adds to the pods of a model spanning its nodes (pure): the daemon
beside the server and the node directories (`config.upstream.interconnects`); its variables and
annotations are the model's (`ModelSpec.interconnect_env`, `network_annotations`), which the
checks read too.

The daemon is a native sidecar (an init container that keeps running), so it is up before the
server's collectives start and stops with the pod, as the decode pods' routing sidecar is.
"""

from __future__ import annotations

from typing import Any

from config.spec.model import ModelSpec
from config.upstream.interconnects import NETWORK_PROFILES, NetworkProfile


def _profile(model: ModelSpec) -> NetworkProfile | None:
    return NETWORK_PROFILES[model.network.profile] if model.network is not None else None


def network_mounts(model: ModelSpec) -> list[dict[str, Any]]:
    profile = _profile(model)
    return [{"name": m.volume, "mountPath": m.mount_path} for m in profile.mounts] if profile is not None else []


def network_volumes(model: ModelSpec) -> list[dict[str, Any]]:
    profile = _profile(model)
    if profile is None:
        return []
    return [{"name": m.volume, "hostPath": {"path": m.host_path}} for m in profile.host_mounts]


def network_daemon(model: ModelSpec) -> dict[str, Any] | None:
    profile = _profile(model)
    if profile is None or profile.daemon is None or model.network is None:
        return None
    return {
        "name": profile.daemon,
        "image": model.network_daemon_image or profile.daemon_image,
        "imagePullPolicy": model.config.image_pull_policy,
        "restartPolicy": "Always",
        "command": list(profile.daemon_command),
        "env": [{"name": name, "value": value} for name, value in profile.daemon_env.items()],
        "resources": {"requests": dict(profile.daemon_requests), "limits": dict(profile.daemon_requests)},
        "securityContext": {"capabilities": {"add": list(profile.daemon_capabilities)}},
        "volumeMounts": [{"name": m.volume, "mountPath": m.mount_path} for m in profile.daemon_mounts],
    }
