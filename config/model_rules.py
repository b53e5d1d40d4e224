"""Checks of each model: parallelism, vLLM flags, references, secrets and placement options."""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal

from config.errors import Problem, join_path
from config.models import SecretRef
from config.quantity import quantity_value
from config.security_rules import credential_shape
from config.spec import ModelSpec, PlatformSpec
from config.vllm_releases import (
    ENGINE_READY_DEFAULT_SECONDS,
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_SINCE,
    MODEL_FAMILY_PARSERS,
    OLDEST_KNOWN,
    REMOVED_FLAGS,
    TOOL_PARSERS,
    TRANSFORMERS_V5_POSSIBLE,
    TRANSFORMERS_V5_REQUIRED,
    Version,
    version_text,
)

# Flags the program renders from typed keys: giving them in extraArgs would render them twice.
GENERATED_FLAGS = {
    "--tensor-parallel-size": "engine.tensorParallelSize",
    "-tp": "engine.tensorParallelSize",
    "--pipeline-parallel-size": "engine.pipelineParallelSize",
    "-pp": "engine.pipelineParallelSize",
    "--dtype": "engine.dtype",
    "--max-model-len": "engine.maxModelLen",
    "--gpu-memory-utilization": "engine.gpuMemoryUtilization",
    "--served-model-name": "servedModelName",
    "--trust-remote-code": "engine.trustRemoteCode",
    "--enforce-eager": "engine.enforceEager",
    "--tool-call-parser": "engine.toolCallParser",
    "--enable-auto-tool-choice": "engine.toolCallParser",
    "--hf-overrides": "engine.hfOverrides",
    "--port": "port",
    "--host": "(set by the platform)",
    "--distributed-executor-backend": "(set by the platform)",
    "--model": "source",
}
_CREDENTIAL_NAME = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|API_KEY|ACCESS_KEY|PRIVATE_KEY)", re.I)
# Variables LWS injects into every container of a LeaderWorkerSet.
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")
_CAPABILITY = re.compile(r"^[A-Z][A-Z_]*$")


def check_models(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for model in spec.models.values():
        problems += _parallelism(model)
        problems += _references(spec, model)
        problems += _engine_args(model)
        problems += _vllm_release(model)
        problems += _tool_parser(model)
        problems += _rope(model)
        problems += _volumes(spec, model)
        problems += _environment(spec, model)
        problems += _placement_options(spec, model)
        problems += _pod_options(model)
        problems += _node_capacity(spec, model)
    return problems


def _parallelism(model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    if cfg.multi_node and cfg.resources.gpus == 0:
        problems.append(
            Problem(
                join_path(path, "resources", "gpus"),
                "a multi-node model needs GPUs on every node",
                "set `resources.gpus`, or use `nodesPerReplica: 1`",
                got=0,
            )
        )
        return problems
    world = cfg.tensor_parallel * cfg.pipeline_parallel
    available = max(cfg.resources.gpus, 1) * cfg.nodes_per_replica
    if cfg.resources.gpus and world != available:
        problems.append(
            Problem(
                join_path(path, "engine"),
                f"tensor x pipeline parallel = {cfg.tensor_parallel} x {cfg.pipeline_parallel} = "
                f"{world}, but a replica has {cfg.resources.gpus} GPU(s) x {cfg.nodes_per_replica} "
                f"node(s) = {available}",
                "make tensorParallelSize x pipelineParallelSize equal GPUs per pod x nodesPerReplica "
                f"(e.g. tp {cfg.resources.gpus} x pp {cfg.nodes_per_replica})",
            )
        )
    return problems


def _references(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    if cfg.priority_class not in spec.priority_classes:
        problems.append(
            Problem(
                join_path(path, "priorityClass"),
                f"priority class `{cfg.priority_class}` does not exist",
                "use one of: " + ", ".join(spec.priority_classes),
                got=cfg.priority_class,
            )
        )
    for index, registry in enumerate(cfg.image_pull_secrets):
        if registry not in spec.config.registries:
            problems.append(
                Problem(
                    join_path(path, "imagePullSecrets", index),
                    f"registry `{registry}` is not defined",
                    "add it under `registries` (server, username, passwordSecret)",
                    got=registry,
                )
            )
    if cfg.source.hub and cfg.source.hub.token_secret:
        problems += _secret_exists(spec, cfg.source.hub.token_secret, join_path(path, "source", "hub", "tokenSecret"))
    return problems


def _secret_exists(spec: PlatformSpec, name: str, path: str) -> list[Problem]:
    if name in spec.config.secrets:
        return []
    return [
        Problem(
            path,
            f"secret `{name}` is not defined",
            f"set it with `pulumi config set --secret --path 'secrets.{name}' <value>`",
            got=name,
        )
    ]


def check_registries(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for name, registry in spec.config.registries.items():
        problems += _secret_exists(spec, registry.password_secret, join_path("registries", name, "passwordSecret"))
    return problems


def _engine_args(model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name, "engine", "extraArgs")
    problems: list[Problem] = []
    version = ".".join(str(p) for p in model.vllm_version)
    for index, arg in enumerate(cfg.engine.extra_args):
        flag = arg.split("=", 1)[0]
        if flag in GENERATED_FLAGS:
            problems.append(
                Problem(
                    join_path(path, index),
                    f"`{flag}` is set by the platform",
                    f"use `{GENERATED_FLAGS[flag]}` instead",
                    got=arg,
                )
            )
        removed = REMOVED_FLAGS.get(flag)
        if removed and model.vllm_version >= removed[0]:
            since = version_text(removed[0])
            problems.append(
                Problem(
                    join_path(path, index),
                    f"`{flag}` was removed in vLLM {since} and aborts startup (the model runs vLLM {version})",
                    removed[1],
                    got=arg,
                )
            )
    problems += _repeated_flags(cfg.engine.extra_args, path)
    return problems


def _repeated_flags(args: tuple[str, ...], path: str) -> list[Problem]:
    """A flag given twice (the last silently wins) or with its `--no-` opposite."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        flag = arg.split("=", 1)[0]
        base = "--" + flag[5:] if flag.startswith("--no-") else flag
        if base in seen:
            first = args[seen[base]].split("=", 1)[0]
            what = "is given twice" if first == flag else f"contradicts `{first}`"
            problems.append(
                Problem(
                    join_path(path, index),
                    f"`{flag}` {what} (at index {seen[base]}); vLLM keeps the last, silently",
                    "give each flag once",
                    got=arg,
                )
            )
        seen.setdefault(base, index)
    return problems


def _vllm_release(model: ModelSpec) -> list[Problem]:
    """What the checks assume about the vLLM release: the version itself, and the engine-ready
    wait that only later releases let the load budget raise."""
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    version = version_text(model.vllm_version)
    if not model.vllm_version_known:
        problems.append(
            Problem(
                join_path(path, "image"),
                f"the vLLM version cannot be read from the image tag, so its flags and tool-call parser were "
                f"checked against vLLM {version}, the current release",
                'state the version the image runs with `vllmVersion: "0.11.0"`',
                got=cfg.image,
                severity="warning",
            )
        )
    budget = cfg.startup.load_timeout_seconds
    if model.vllm_version < ENGINE_READY_TIMEOUT_SINCE and budget > ENGINE_READY_DEFAULT_SECONDS:
        problems.append(
            Problem(
                join_path(path, "startup", "loadTimeoutSeconds"),
                f"vLLM {version} waits at most {ENGINE_READY_DEFAULT_SECONDS} s for its engine to load (the wait "
                f"is hard-coded before {version_text(ENGINE_READY_TIMEOUT_SINCE)}; {ENGINE_READY_TIMEOUT_ENV} "
                f"arrived later), so a load longer than that aborts the server despite the {budget} s budget",
                f"make sure the weights load within {ENGINE_READY_DEFAULT_SECONDS} s (weights on local disks or a "
                f"fast volume), or use a vLLM >= {version_text(ENGINE_READY_TIMEOUT_SINCE)} image, whose wait "
                "the platform raises to the budget",
                got=budget,
                severity="warning",
            )
        )
    return problems


def available_parsers(version: Version) -> list[str]:
    return sorted(
        name for name, (since, gone) in TOOL_PARSERS.items() if since <= version and (gone is None or version < gone)
    )


def model_family(model: ModelSpec) -> tuple[str, tuple[str, ...]] | None:
    """(family, parsers that read its tool calls) from the model's names, if the family is known."""
    cfg = model.config
    # The names that say most about the weights first: the served name, then the weights' own.
    names = [cfg.served_model_name, cfg.source.hub.id if cfg.source.hub else cfg.source.model, model.name]
    for name in names:
        for pattern, family, parsers in MODEL_FAMILY_PARSERS:
            if name and re.search(pattern, name.lower()):
                return family, parsers
    return None


def _tool_parser(model: ModelSpec) -> list[Problem]:
    parser = model.config.engine.tool_call_parser
    if parser is None:
        return []
    path = join_path("models", model.name, "engine", "toolCallParser")
    version = model.vllm_version
    problems: list[Problem] = []
    if version >= OLDEST_KNOWN and parser not in available_parsers(version):
        problems.append(
            Problem(
                path,
                f"vLLM {version_text(version)} has no tool-call parser `{parser}`, so the server would not start",
                "use one of: " + ", ".join(available_parsers(version)),
                got=parser,
            )
        )
    family = model_family(model)
    if family is not None and parser not in family[1]:
        problems.append(
            Problem(
                path,
                f"{family[0]} models write tool calls that `{parser}` does not read: every tool call would come "
                "back as plain text",
                "use " + " or ".join(f"`{p}`" for p in family[1]),
                got=parser,
                severity="warning",
            )
        )
    return problems


def _rope(model: ModelSpec) -> list[Problem]:
    """RoPE overrides in the form the image's transformers applies without losing `rope_theta`."""
    engine = model.config.engine
    path = join_path("models", model.name, "engine")
    version = model.vllm_version
    problems: list[Problem] = []
    if engine.rope_scaling and version >= TRANSFORMERS_V5_POSSIBLE and engine.rope_theta is None:
        problems.append(
            Problem(
                join_path(path, "ropeTheta"),
                f"vLLM {version_text(version)} images run transformers v5, where RoPE scaling replaces every "
                "RoPE parameter; without the model's `rope_theta` it would be dropped and outputs silently degrade",
                "add `ropeTheta` with the model's `rope_theta` from its config.json (e.g. 1000000 for Qwen3)",
            )
        )
    if "rope_scaling" in engine.hf_overrides and version >= TRANSFORMERS_V5_REQUIRED:
        problems.append(
            Problem(
                join_path(path, "hfOverrides", "rope_scaling"),
                f"on vLLM {version_text(version)} (transformers v5) a `rope_scaling` override replaces every RoPE "
                "parameter and drops the model's `rope_theta`",
                "use `engine.ropeScaling` with `engine.ropeTheta` instead",
            )
        )
    if engine.rope_scaling and TRANSFORMERS_V5_POSSIBLE <= version < TRANSFORMERS_V5_REQUIRED:
        problems.append(
            Problem(
                join_path(path, "ropeScaling"),
                f"vLLM {version_text(version)} images may run transformers 4 or 5; the override is written for 5 "
                "(`rope_parameters`), which transformers 4 ignores",
                "if the image has transformers 4, write `hfOverrides: {rope_scaling: ...}` instead of `ropeScaling`",
                severity="warning",
            )
        )
    return problems


# Volume names the pod template uses itself.
RESERVED_VOLUMES = {"dshm": "/dev/shm", "model": "the model weights"}


def host_path_allowed(path: str, allowed: Iterable[str]) -> bool:
    return any(path == prefix or path.startswith(prefix.rstrip("/") + "/") for prefix in allowed)


def _volumes(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
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


def _environment(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name, "env")
    problems: list[Problem] = []
    platform_set = {
        **(dict.fromkeys(LWS_ENV, "LeaderWorkerSet injects it") if model.multi_node else {}),
        **({"VLLM_HOST_IP": "the platform sets it to the pod IP"} if model.multi_node else {}),
        **(
            {"HF_TOKEN": "the platform sets it from `source.hub.tokenSecret`"}
            if cfg.source.hub and cfg.source.hub.token_secret
            else {}
        ),
    }
    for name, value in cfg.env.items():
        var_path = join_path(path, name)
        if name in platform_set:
            problems.append(Problem(var_path, f"`{name}` is set already: {platform_set[name]}", "remove it from `env`"))
        elif isinstance(value, str) and _CREDENTIAL_NAME.search(name) and value:
            problems.append(
                Problem(
                    var_path,
                    f"`{name}` looks like a credential but is given in plain text",
                    f"store it with `pulumi config set --secret --path 'secrets.{name.lower().replace('_', '-')}'` "
                    f"and write `{name}: {{secret: {name.lower().replace('_', '-')}}}`",
                    got="[hidden]",
                )
            )
        elif isinstance(value, str) and (shape := credential_shape(value)):
            problems.append(
                Problem(
                    var_path,
                    f"the value looks like {shape} written in plain text",
                    "store it under `secrets` (`pulumi config set --secret --path 'secrets.<name>' <value>`) and "
                    f"write `{name}: {{secret: <name>}}`",
                    got="[hidden]",
                )
            )
        elif isinstance(value, SecretRef):
            problems += _secret_exists(spec, value.secret, join_path(var_path, "secret"))
        if isinstance(value, str):
            problems += _managed_env(spec, model, name, value, var_path)
    return problems


DEVICE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")


def _managed_env(spec: PlatformSpec, model: ModelSpec, name: str, value: str, path: str) -> list[Problem]:
    """Variables that silently override what the platform manages."""
    cfg = model.config
    gpus = cfg.resources.gpus
    if name in DEVICE_ENV or name == spec.accelerator.vendor.device_env:
        visible = [d for d in value.split(",") if d.strip()]
        if gpus and len(visible) < gpus:
            return [
                Problem(
                    path,
                    f"`{name}` makes {len(visible)} of the pod's {gpus} devices visible; vLLM would use only those",
                    "remove it: the device plugin already gives each pod exactly its devices",
                    got=value,
                )
            ]
    if name == ENGINE_READY_TIMEOUT_ENV:
        if model.vllm_version < ENGINE_READY_TIMEOUT_SINCE:
            return [
                Problem(
                    path,
                    f"vLLM {version_text(model.vllm_version)} does not read `{name}` (it arrived in "
                    f"{version_text(ENGINE_READY_TIMEOUT_SINCE)})",
                    "remove it; see the warning on `startup.loadTimeoutSeconds`",
                    got=value,
                    severity="warning",
                )
            ]
        if value.isdigit() and int(value) < cfg.startup.load_timeout_seconds:
            return [
                Problem(
                    path,
                    f"the engine gives up after {value} s, before the load budget of "
                    f"{cfg.startup.load_timeout_seconds} s the probes allow",
                    "remove it: the platform sets it to `startup.loadTimeoutSeconds`",
                    got=value,
                    severity="warning",
                )
            ]
    return []


def _placement_options(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    if cfg.topology is not None and not cfg.multi_node:
        problems.append(
            Problem(
                join_path(path, "topology"),
                "a topology constraint applies to multi-node models only (one pod has no network span)",
                "remove `topology`, or set `nodesPerReplica` > 1",
            )
        )
    if cfg.topology is not None and cfg.multi_node:
        if spec.config.lws.gang_scheduling:
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "with `lws.gangScheduling: true` LWS makes the "
                    "PodGroups itself, without network topology, so this constraint would be ignored",
                    "turn `lws.gangScheduling` off (the platform then makes topology-aware PodGroups), "
                    "or remove the constraint",
                )
            )
        elif spec.topology is None:
            hard = cfg.topology.mode == "hard"
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "the stack describes no `topology`, so no HyperNodes exist to enforce this constraint"
                    + ("; a hard constraint would leave every replica Pending or unconstrained" if hard else ""),
                    "describe the network under `topology`, or remove the constraint",
                    severity="error" if hard else "warning",
                )
            )
        if cfg.topology.mode == "hard" and cfg.topology.highest_tier is None and cfg.topology.highest_tier_name is None:
            problems.append(
                Problem(
                    join_path(path, "topology", "mode"),
                    "hard mode without a tier applies no limit at all, which is not what `hard` promises",
                    "set `highestTier` (1 = leaf), or use `mode: soft`",
                    got="hard",
                )
            )
    if cfg.multi_node and cfg.port == cfg.ray.port:
        problems.append(
            Problem(
                join_path(path, "port"),
                f"port {cfg.port} is also the Ray head port",
                "use another port (or move `ray.port`)",
                got=cfg.port,
            )
        )
    return problems


def _zero(value: int | str) -> bool:
    return value == 0 or (isinstance(value, str) and value.rstrip("%").strip() in ("0", ""))


def _node_capacity(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A pod must fit one node; with the node's allocatable unknown, only absurd requests are caught."""
    node = spec.config.cluster.node
    problems: list[Problem] = []
    for resource, requested, allocatable, absurd in (
        ("cpu", model.config.resources.cpu, node.cpu, Decimal(1024)),
        ("memory", model.config.resources.memory, node.memory, Decimal(64 * 2**40)),
    ):
        value = quantity_value(requested)
        limit = quantity_value(allocatable) if allocatable is not None else absurd
        if value > limit:
            known = allocatable is not None
            problems.append(
                Problem(
                    join_path("models", model.name, "resources", resource),
                    f"each pod requests {requested} {resource}, more than "
                    + (
                        f"a GPU node's allocatable {allocatable} (`cluster.node.{resource}`)"
                        if known
                        else "any node has"
                    )
                    + "; the pods would stay Pending",
                    "request at most what one node offers (spread the model over more nodes with nodesPerReplica)",
                    got=requested,
                )
            )
    return problems


def _pod_options(model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    image = cfg.image.split("@", 1)
    name_tag = image[0].rsplit("/", 1)[-1]
    if len(image) == 1 and (":" not in name_tag or name_tag.endswith(":latest")):
        problems.append(
            Problem(
                join_path(path, "image"),
                "the image is not pinned (no tag, or `latest`)",
                "pin a version tag or a digest, so every node runs the same build",
                got=cfg.image,
            )
        )
    memory = quantity_value(cfg.resources.memory)
    if cfg.shm_size_gi * 2**30 > memory:
        problems.append(
            Problem(
                join_path(path, "shmSizeGi"),
                f"/dev/shm ({cfg.shm_size_gi}Gi) is larger than the "
                f"pod's memory ({cfg.resources.memory}); shared memory counts against it",
                "lower `shmSizeGi` or raise `resources.memory`",
                severity="warning",
            )
        )
    for index, capability in enumerate(cfg.capabilities or ()):
        if not _CAPABILITY.match(capability):
            problems.append(
                Problem(
                    join_path(path, "capabilities", index),
                    f"`{capability}` is not a capability name",
                    "use upper-case names such as `IPC_LOCK`",
                    got=capability,
                )
            )
    if cfg.engine.gpu_memory_utilization == 1:
        problems.append(
            Problem(
                join_path(path, "engine", "gpuMemoryUtilization"),
                "vLLM may then take all device memory for weights and KV cache, leaving none for CUDA graphs, "
                "activations or the runtime: the engine fails with out-of-memory errors under load",
                "leave headroom, e.g. 0.9",
                got=1.0,
                severity="warning",
            )
        )
    rollout = cfg.rollout
    if _zero(rollout.max_surge) and _zero(rollout.max_unavailable):
        problems.append(
            Problem(
                join_path(path, "rollout"),
                "maxSurge and maxUnavailable are both 0: an update could never replace a replica, and the API "
                "server rejects it",
                "allow `maxUnavailable: 1` (no spare GPUs needed) or `maxSurge: 1`",
            )
        )
    rdma = [d for d in cfg.resources.devices if "rdma" in d.lower()]
    if rdma and cfg.capabilities is not None and "IPC_LOCK" not in cfg.capabilities:
        problems.append(
            Problem(
                join_path(path, "capabilities"),
                "RDMA devices are requested without IPC_LOCK; memory registration will fail",
                "add `IPC_LOCK`",
                severity="warning",
            )
        )
    return problems
