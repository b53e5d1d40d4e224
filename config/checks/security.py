"""What a model's pods may do on a node.

Models run tenant workloads on shared GPU nodes. Capabilities beyond what RDMA needs, a seccomp
filter switched off, tolerations of every taint and namespaces that admit privileged pods widen
what one tenant's pod can do to the node and to others; they are refused or warned about at the
key that asks for them."""

from __future__ import annotations

from config.errors import Problem, join_path
from config.platform_labels import ALLOW_UNCONFINED_ANNOTATION, platform_label_keys
from config.sections.models import ModelConfig
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.spec.tenancy.grants import grant_of
from config.upstream.interconnects import NETWORK_PROFILES
from config.upstream.kubernetes import MULTUS_ANNOTATION, PSA_LABEL_PREFIX
from config.upstream.volcano import GROUP_NAME_ANNOTATION, PREEMPTABLE_ANNOTATION, QUEUE_ANNOTATION

# What RDMA and pinned memory need; other added capabilities are warned about or refused.
EXPECTED_CAPABILITIES = frozenset({"IPC_LOCK", "SYS_RESOURCE"})
# Capabilities that amount to control of the node.
REFUSED_CAPABILITIES = frozenset(
    {
        "ALL",
        "SYS_ADMIN",
        "SYS_MODULE",
        "SYS_RAWIO",
        "SYS_PTRACE",
        "SYS_BOOT",
        "SYS_TIME",
        "NET_ADMIN",
        "NET_RAW",
        "DAC_READ_SEARCH",
        "BPF",
        "PERFMON",
        "MAC_ADMIN",
        "MAC_OVERRIDE",
        "SYSLOG",
    }
)
# Pod Security Standards, baseline level: the capabilities it admits.
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
ANNOTATIONS_MAX_BYTES = 256 * 1024  # total size of an object's annotations (keys and values)
LWS_LABEL_PREFIX = "leaderworkerset.sigs.k8s.io/"
PLATFORM_POD_ANNOTATIONS = (
    QUEUE_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_ANNOTATION,
    MULTUS_ANNOTATION,
    ALLOW_UNCONFINED_ANNOTATION,
)


def check_pod_security(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for model in spec.models.values():
        problems += _model_security(model)
        problems += _platform_keys(model)
    problems += _namespace_security(spec)
    return problems


def _model_security(model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    for index, capability in enumerate(cfg.capabilities or ()):
        where = join_path(path, "capabilities", index)
        if capability in REFUSED_CAPABILITIES:
            problems.append(
                Problem(
                    where,
                    f"`{capability}` gives the pod control over the node (and every other tenant's pods on it)",
                    "drop it; RDMA needs only IPC_LOCK",
                    got=capability,
                )
            )
        elif capability not in EXPECTED_CAPABILITIES:
            problems.append(
                Problem(
                    where,
                    f"`{capability}` is more than inference pods need (RDMA needs only IPC_LOCK)",
                    "drop it unless the vendor runtime documents that it needs it",
                    got=capability,
                    severity="warning",
                )
            )
    if cfg.seccomp_profile == "Unconfined":
        problems.append(
            Problem(
                join_path(path, "seccompProfile"),
                "the containers run without a seccomp filter, so every system call reaches the node's kernel",
                "use `RuntimeDefault` unless the vendor runtime documents that it needs `Unconfined`",
                got="Unconfined",
                severity="warning",
            )
        )
    for index, toleration in enumerate(cfg.tolerations):
        if toleration.operator == "Exists" and not toleration.key:
            problems.append(
                Problem(
                    join_path(path, "tolerations", index),
                    "an `Exists` toleration without a key tolerates every taint: the pods may land on "
                    "control-plane, draining or broken nodes",
                    "tolerate the GPU nodes' taint by key",
                    severity="warning",
                )
            )
    return problems


def _platform_keys(model: ModelSpec) -> list[Problem]:
    """User labels and annotations must not overwrite what the platform sets (it would win and
    the user's value would be silently dropped; or the user's would win and break selection)."""
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    reserved_labels = platform_label_keys()
    for key in cfg.labels:
        if key in reserved_labels or key.startswith(LWS_LABEL_PREFIX):
            problems.append(
                Problem(
                    join_path(path, "labels", key),
                    f"`{key}` is a label the platform (or LWS) sets itself; selectors and Services depend on it",
                    "use another label key",
                    got=key,
                )
            )
    size = sum(len(key) + len(value) for key, value in cfg.annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        problems.append(
            Problem(
                join_path(path, "annotations"),
                f"the annotations take {size:,} bytes; Kubernetes refuses more than {ANNOTATIONS_MAX_BYTES:,} "
                "per object",
                "keep large data in a ConfigMap and mount it (`volumes`)",
            )
        )
    for key in cfg.annotations:
        if key in PLATFORM_POD_ANNOTATIONS:
            problems.append(
                Problem(
                    join_path(path, "annotations", key),
                    f"`{key}` is an annotation the platform sets from typed settings",
                    _annotation_fix(key),
                    got=key,
                )
            )
    return problems


def _annotation_fix(key: str) -> str:
    return {
        QUEUE_ANNOTATION: "choose the queue through `tenant`",
        GROUP_NAME_ANNOTATION: "the platform names the PodGroup of multi-node models",
        PREEMPTABLE_ANNOTATION: "set `preemptable`",
        MULTUS_ANNOTATION: "list the networks under `networks`",
        ALLOW_UNCONFINED_ANNOTATION: "set `seccompProfile: Unconfined`",
    }[key]


def needs_privileged(cfg: ModelConfig, capabilities: tuple[str, ...]) -> list[str]:
    """What in a model's pods the Pod Security `baseline` level refuses."""
    return [reason for _, reason in _beyond_baseline("", cfg, capabilities)]


def _beyond_baseline(path: str, cfg: ModelConfig, capabilities: tuple[str, ...]) -> list[tuple[str, str]]:
    """(key, reason) for what in a model's pods the `baseline` level refuses, at the key asking for it."""
    found: list[tuple[str, str]] = []
    explicit = cfg.capabilities is not None
    for index, capability in enumerate(capabilities):
        if capability in BASELINE_CAPABILITIES:
            continue
        if explicit:
            found.append((join_path(path, "capabilities", index), f"capability {capability}"))
        else:
            device = next((d for d in cfg.resources.devices if "rdma" in d.lower()), "")
            found.append((join_path(path, "resources", "devices", device), f"capability {capability} (for RDMA)"))
    if cfg.seccomp_profile == "Unconfined":
        found.append((join_path(path, "seccompProfile"), "seccomp Unconfined"))
    if cfg.source.host_path is not None:
        found.append((join_path(path, "source", "hostPath"), "a hostPath volume"))
    for name, volume in cfg.volumes.items():
        if volume.host_path is not None:
            found.append((join_path(path, "volumes", name, "hostPath"), "a hostPath volume"))
    return found


def _network_beyond_baseline(path: str, model: ModelSpec) -> list[tuple[str, str]]:
    """What the pool's network profile adds to the pods that `baseline` refuses (node directories,
    capabilities beyond its set), at the model's pools."""
    if model.network is None:
        return []
    profile = NETWORK_PROFILES[model.network.profile]
    what = [f"host path {m.host_path}" for m in profile.host_mounts]
    what += [f"capability {c}" for c in profile.daemon_capabilities if c not in BASELINE_CAPABILITIES]
    if not what:
        return []
    return [(path, f"{', '.join(what)} (its pools' `{profile.name}` network profile)")]


def _namespace_security(spec: PlatformSpec) -> list[Problem]:
    """Every tenant's namespaces enforce its Pod Security level (`tenantPolicy...podSecurity`,
    labels the platform sets): a model whose pods the level refuses would never start, so it is
    refused here with the grant that admits it. The level is not a label to write."""
    problems: list[Problem] = []
    for tenant in spec.tenants.values():
        for key in tenant.config.labels:
            if key.startswith(PSA_LABEL_PREFIX):
                problems.append(
                    Problem(
                        join_path("tenants", tenant.name, "labels", key),
                        "the platform labels every tenant namespace with the Pod Security level of its grant",
                        f"remove the label; the level is `tenantPolicy.tenants.{tenant.name}.podSecurity` in the "
                        "stack file (default `baseline`)",
                        got=tenant.config.labels[key],
                    )
                )
    needed: dict[str, bool] = {}
    for model in spec.models.values():
        grant = grant_of(spec, model.tenant)
        level = grant.pod_security
        in_file = spec.file_of_model(model.name) is not None
        fix = (
            f"remove it, or have the platform team set {grant.key('podSecurity', 'privileged')}"
            if in_file
            else f"remove it, or set `tenantPolicy.tenants.{model.tenant}.podSecurity: privileged` knowingly"
        )
        for view in (model, *model.role_views):
            path = join_path("models", model.name, *(("roles", view.serving_role) if view.serving_role else ()))
            reasons = _beyond_baseline(path, view.config, view.config.effective_capabilities)
            reasons += _network_beyond_baseline(join_path("models", model.name, "pools"), view)
            if reasons:
                needed[model.tenant] = True
            if level == "privileged":
                continue
            for key, reason in reasons:
                problems.append(
                    Problem(
                        key,
                        f"tenant `{model.tenant}`'s namespaces enforce the `{level}` Pod Security level, which refuses "
                        f"the pods' {reason}: the API server would not create them",
                        fix,
                    )
                )
            if level == "restricted" and not reasons and view is model:
                problems.append(
                    Problem(
                        join_path("models", model.name),
                        f"tenant `{model.tenant}`'s namespaces enforce the `restricted` Pod Security level, which "
                        "refuses containers that run as root, as vLLM images do",
                        f"have the tenant's level be `baseline` ({grant.key('podSecurity')})",
                    )
                )
    for name, tenant in spec.tenants.items():
        grant = grant_of(spec, name)
        if grant.pod_security == "privileged" and not needed.get(name) and tenant.namespaces:
            problems.append(
                Problem(
                    f"tenantPolicy.tenants.{name}.podSecurity",
                    f"tenant `{name}`'s namespaces admit privileged pods (host namespaces, any capability, any host "
                    "path), and none of its models needs it",
                    "grant `baseline` (the default) unless something else in those namespaces needs more",
                    got="privileged",
                    severity="warning",
                )
            )
    return problems
