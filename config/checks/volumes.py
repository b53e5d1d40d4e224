"""Checks of a model's volumes: host paths only from allowed directories (and never the node's runtime),
one mount per path, nothing mounted over what the platform or the container's system provides, no
platform names."""

from __future__ import annotations

import re
from collections.abc import Iterable

from config.errors import Problem, join_path
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec

# Volume names the pod template uses itself.
RESERVED_VOLUMES = {"dshm": "/dev/shm", "model": "the model weights"}
# Node directories of the kubelet, the container runtime and the kernel: a pod that mounts one (or
# a directory holding one) can read other pods' secrets, start containers or change the node.
RUNTIME_DIRECTORIES = (
    "/etc",
    "/run",
    "/var/run",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/docker",
    "/var/lib/containers",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
)
# Container runtime API sockets (containerd, Docker, CRI-O, k3s, cri-dockerd): whoever can write to one
# starts privileged containers on the node.
RUNTIME_SOCKET = re.compile(r"\.sock$")
# Mount paths that would hide the container's own system; `/dev` and `/` also hide `/dev/shm`.
SHADOWING_MOUNTS = {
    "/": "the container's whole file system",
    "/dev": "the devices and `/dev/shm`",
    "/proc": "the process file system",
    "/sys": "the kernel's file system",
}
# Files and directories the kubelet mounts into every container.
KUBELET_MOUNTS = ("/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/var/run/secrets/kubernetes.io/serviceaccount")


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def check_host_paths(spec: PlatformSpec) -> list[Problem]:
    """`cluster.hostPaths` widened to the node's runtime: every model may then mount it."""
    problems: list[Problem] = []
    for index, entry in enumerate(spec.config.cluster.host_paths):
        entry = entry.rstrip("/")
        hit = next((d for d in RUNTIME_DIRECTORIES if _within(entry, d) or _within(d, entry)), None)
        if hit is not None:
            problems.append(
                Problem(
                    join_path("cluster", "hostPaths", index),
                    f"`{entry}` "
                    + ("is" if entry == hit else "lies in" if _within(entry, hit) else "holds")
                    + f" `{hit}`, a directory of the node's kubelet, container runtime or kernel: any model may then "
                    "mount it, and a pod with it can take over its node",
                    "allow only the directories that hold weights or drivers, e.g. `/data/models`",
                    got=entry,
                    severity="warning",
                )
            )
    return problems


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
        elif RUNTIME_SOCKET.search(host_path):
            problems.append(
                Problem(
                    where,
                    f"`{host_path}` is a container runtime socket: a pod that can write to it starts privileged "
                    "containers on the node and with them takes the node over",
                    "do not mount runtime sockets into model pods",
                    got=host_path,
                )
            )
    for name, volume in cfg.volumes.items():
        if volume.host_path is not None and not volume.read_only:
            problems.append(
                Problem(
                    join_path(path, "volumes", name, "readOnly"),
                    f"the node's `{volume.host_path}` is mounted writable: the pod can change what the node (and every "
                    "later pod on it) reads there",
                    "mount it read-only (`readOnly: true`, the default); write to a PVC or an emptyDir instead",
                    got=False,
                    severity="warning",
                )
            )
    mounts: dict[str, str] = {"/dev/shm": "the shared-memory volume"}
    if cfg.source.hub is None:
        source_mount = cfg.source.mount_path.rstrip("/") or "/"
        problems += _shadowing(join_path(path, "source", "mountPath"), source_mount, mounts)
        mounts.setdefault(source_mount, "the model weights (`source.mountPath`)")
    for name, volume in cfg.volumes.items():
        where = join_path(path, "volumes", name)
        if name in RESERVED_VOLUMES:
            problems.append(
                Problem(where, f"`{name}` is the platform's volume for {RESERVED_VOLUMES[name]}", "choose another name")
            )
        mount = volume.mount_path.rstrip("/") or "/"
        if mount not in mounts:
            problems += _shadowing(join_path(where, "mountPath"), mount, mounts)
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


def _shadowing(where: str, mount: str, mounts: dict[str, str]) -> list[Problem]:
    """A mount over what the platform mounts or over the container's own system."""
    if mount in mounts:
        return [
            Problem(
                where,
                f"`{mount}` is already the mount path of {mounts[mount]}; two volumes cannot be mounted at one path",
                "choose another mount path",
                got=mount,
            )
        ]
    if mount in SHADOWING_MOUNTS:
        return [
            Problem(
                where,
                f"a volume at `{mount}` hides {SHADOWING_MOUNTS[mount]}, which vLLM and the runtime need",
                "mount it at a directory of its own, e.g. `/models` or `/opt/<vendor>`",
                got=mount,
            )
        ]
    hidden = next((f for f in KUBELET_MOUNTS if _within(f, mount) or _within(mount, f)), None)
    if hidden is not None or mount == "/etc":
        return [
            Problem(
                where,
                f"a volume at `{mount}` hides "
                + (f"`{hidden}`, which the kubelet mounts into every container" if hidden else "the image's `/etc`")
                + " (name resolution, the service-account token, the image's configuration)",
                "mount it at a directory of its own",
                got=mount,
                severity="warning",
            )
        ]
    return []


ONE_NODE_MODES = ("ReadWriteOnce", "ReadWriteOncePod")


def check_weight_claims(spec: PlatformSpec) -> list[Problem]:
    """Models of one namespace that share a created claim describe it alike; a claim one node at a
    time can mount holds only a model whose every pod is on one node."""
    problems: list[Problem] = []
    first: dict[tuple[str, str], str] = {}
    for model in spec.models.values():
        pvc = model.config.source.pvc
        if pvc is None or pvc.create is None:
            continue
        key = (model.namespace, pvc.claim_name)
        path = join_path("models", model.name, "source", "pvc", "create")
        if key in first and spec.claims[key] != pvc.create:
            problems.append(
                Problem(
                    path,
                    f"claim `{pvc.claim_name}` in namespace `{model.namespace}` is also created by model "
                    f"`{first[key]}`, described differently",
                    f"describe it alike in both models, or create it in one (`models.{first[key]}.source.pvc.create`) "
                    "and leave `create` out here",
                )
            )
        first.setdefault(key, model.name)
        per_replica = model.slice_gang.max_pods if model.disaggregated else model.gang.pods
        pods = per_replica * max(model.config.planned_replicas, 1)
        if pvc.create.access_mode in ONE_NODE_MODES and pods > 1:
            problems.append(
                Problem(
                    join_path(path, "accessMode"),
                    f"`{pvc.create.access_mode}` lets one node mount the claim, and the model runs {pods} pods, which "
                    "land on several nodes: the others stay Pending",
                    "use `ReadOnlyMany` or `ReadWriteMany` (a shared file system's StorageClass)",
                    got=pvc.create.access_mode,
                    severity="warning",
                )
            )
    return problems
