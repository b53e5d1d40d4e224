"""What a model's pods may do on a node, and credentials that must not sit in plain text.

Models run tenant workloads on shared GPU nodes. Capabilities beyond what RDMA needs, a seccomp
filter switched off, tolerations of every taint and namespaces that admit privileged pods widen
what one tenant's pod can do to the node and to others; they are refused or warned about at the
key that asks for them. Credentials recognisable by their shape are refused wherever they are
written in plain text.
"""

from __future__ import annotations

import re

from config.errors import Problem, join_path
from config.models import ModelConfig
from config.platform_labels import ALLOW_UNCONFINED_ANNOTATION, platform_label_keys
from config.spec import ModelSpec, PlatformSpec
from config.upstream import GROUP_NAME_ANNOTATION, MULTUS_ANNOTATION, PREEMPTABLE_ANNOTATION, QUEUE_ANNOTATION

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

# Shapes of credentials that leak when written in plain text, whatever the variable is called.
TOKEN_SHAPES = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),
    ("a GitHub token", re.compile(r"\b(ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("an AWS access key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{20,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
# kubeconfig fields that carry credentials.
KUBECONFIG_CREDENTIALS = re.compile(r"^\s*(token|client-key-data|password|client-key)\s*:", re.M)


def credential_shape(value: str) -> str | None:
    """What kind of credential `value` looks like, if any."""
    for what, shape in TOKEN_SHAPES:
        if shape.search(value):
            return what
    return None


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
