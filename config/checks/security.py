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
from config.upstream.kubernetes import MULTUS_ANNOTATION
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
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
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
    reasons = [f"capability {c}" for c in capabilities if c not in BASELINE_CAPABILITIES]
    if cfg.seccomp_profile == "Unconfined":
        reasons.append("seccomp Unconfined")
    if cfg.source.host_path is not None or any(v.host_path for v in cfg.volumes.values()):
        reasons.append("hostPath volumes")
    return reasons


def _namespace_security(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for tenant in spec.tenants.values():
        level = tenant.config.labels.get(PSA_ENFORCE)
        path = join_path("tenants", tenant.name, "labels", PSA_ENFORCE)
        if level == "privileged":
            problems.append(
                Problem(
                    path,
                    "the tenant's namespaces admit privileged pods (host namespaces, any capability, any host path)",
                    "use `baseline` unless the tenant's models need more (the check says what they need)",
                    got=level,
                    severity="warning",
                )
            )
            continue
        if level not in ("baseline", "restricted"):
            continue
        for model in spec.models.values():
            if model.tenant != tenant.name:
                continue
            reasons = needs_privileged(model.config, model.config.effective_capabilities)
            if level == "restricted":
                reasons.append("running as root (vLLM images do), which `restricted` refuses")
            if reasons:
                problems.append(
                    Problem(
                        path,
                        f"Pod Security `{level}` would reject the pods of model `{model.name}` ({'; '.join(reasons)})",
                        "remove what the model does not need, or label the namespace `privileged` knowingly",
                        got=level,
                    )
                )
    return problems
