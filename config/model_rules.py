"""Checks of each model: parallelism, vLLM flags, references, secrets and placement options."""

from __future__ import annotations

import re

from config.errors import Problem, join_path
from config.models import SecretRef
from config.quantity import quantity_value
from config.spec import ModelSpec, PlatformSpec
from config.upstream import VLLM_REMOVED_FLAGS

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
        problems += _environment(spec, model)
        problems += _placement_options(spec, model)
        problems += _pod_options(model)
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
        removed = VLLM_REMOVED_FLAGS.get(flag)
        if removed and model.vllm_version >= removed[0]:
            since = ".".join(str(p) for p in removed[0])
            problems.append(
                Problem(
                    join_path(path, index),
                    f"`{flag}` was removed in vLLM {since} and aborts startup (the model runs vLLM {version})",
                    removed[1],
                    got=arg,
                )
            )
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
        elif isinstance(value, SecretRef):
            problems += _secret_exists(spec, value.secret, join_path(var_path, "secret"))
    return problems


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
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "the stack describes no `topology`, so no HyperNodes exist to enforce this constraint",
                    "describe the network under `topology`",
                    severity="warning",
                )
            )
        if cfg.topology.mode == "hard" and model.highest_tier is None and cfg.topology.highest_tier_name is None:
            problems.append(
                Problem(
                    join_path(path, "topology"),
                    "hard mode without a tier applies no limit",
                    "set `highestTier` (1 = leaf)",
                    severity="warning",
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
