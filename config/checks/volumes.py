"""Checks of a model's volumes: host paths only from allowed directories, one mount per path, no platform names."""

from __future__ import annotations

from collections.abc import Iterable

from config.errors import Problem, join_path
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec

# Volume names the pod template uses itself.
RESERVED_VOLUMES = {"dshm": "/dev/shm", "model": "the model weights"}


def host_path_allowed(path: str, allowed: Iterable[str]) -> bool:
    return any(path == prefix or path.startswith(prefix.rstrip("/") + "/") for prefix in allowed)


def check_volumes(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """Host paths only from the allowed directories; one mount per path; no platform names."""
    cfg = model.config
    path = join_path("models", model.name)
    allowed = [*spec.config.cluster.host_paths, *spec.accelerator.vendor.host_paths]
    problems: list[Problem] = []
    host_paths = [(join_path(path, "volumes", name, "hostPath"), v.host_path) for name, v in cfg.volumes.items()]
    if cfg.source.host_path is not None:
        host_paths.append((join_path(path, "source", "hostPath", "path"), cfg.source.host_path.path))
    for where, host_path in host_paths:
        if host_path is None:
            continue
        if host_path.rstrip("/") == "" or not host_path_allowed(host_path, allowed):
            problems.append(
                Problem(
                    where,
                    f"host path `{host_path}` is outside the directories models may mount "
                    f"({', '.join(allowed)}); a pod with it could read or change the node",
                    "mount a directory below one of them, or add its directory to `cluster.hostPaths`",
                    got=host_path,
                )
            )
    mounts: dict[str, str] = {"/dev/shm": "the shared-memory volume"}
    if cfg.source.hub is None:
        mounts[cfg.source.mount_path.rstrip("/")] = "the model weights (`source.mountPath`)"
    for name, volume in cfg.volumes.items():
        where = join_path(path, "volumes", name)
        if name in RESERVED_VOLUMES:
            problems.append(
                Problem(where, f"`{name}` is the platform's volume for {RESERVED_VOLUMES[name]}", "choose another name")
            )
        mount = volume.mount_path.rstrip("/") or "/"
        if mount in mounts:
            problems.append(
                Problem(
                    join_path(where, "mountPath"),
                    f"`{volume.mount_path}` is already the mount path of {mounts[mount]}; two volumes cannot be "
                    "mounted at one path",
                    "choose another mountPath",
                    got=volume.mount_path,
                )
            )
        mounts.setdefault(mount, f"volume `{name}`")
    return problems
