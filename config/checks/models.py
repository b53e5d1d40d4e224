"""Checks of each model: parallelism, references (priority class, registries, secrets) and pod
options; `check_models` also runs the per-model checks of vllm, volumes, environment and placement."""

from __future__ import annotations

import json
import re

from config.checks.credentials import secret_exists
from config.checks.environment import check_environment
from config.checks.placement import check_disaggregation, check_node_capacity, check_placement_options
from config.checks.vllm import (
    check_engine_args,
    check_image_build,
    check_rope,
    check_tool_parser,
    check_vllm_release,
)
from config.checks.volumes import check_volumes
from config.errors import Problem, join_path
from config.schema.quantity import quantity_value
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec

_CAPABILITY = re.compile(r"^[A-Z][A-Z_]*$")


def check_models(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for model in spec.models.values():
        for view in model.role_views or (model,):
            problems += _parallelism(view)
            problems += check_node_capacity(spec, view)
        problems += check_disaggregation(spec, model)
        problems += _references(spec, model)
        problems += _one_accelerator_type_per_gang(spec, model)
        problems += check_engine_args(model)
        problems += check_vllm_release(model)
        problems += check_image_build(model)
        problems += check_tool_parser(model)
        problems += check_rope(model)
        problems += check_volumes(spec, model)
        problems += check_environment(spec, model)
        problems += check_placement_options(spec, model)
        problems += _pod_options(model)
        problems += _adoption(model)
        problems += _object_size(model)
    return problems


def _adoption(model: ModelSpec) -> list[Problem]:
    """`adopt` may name only objects the stack creates for the model."""
    if "podGroup" not in model.config.adopt or model.has_pod_group:
        return []
    why = (
        "a single-node model has no PodGroup of the platform's"
        if not model.multi_node
        else "LWS makes the PodGroups itself (`lws.gangScheduling`)"
        if not model.own_pod_group
        else "a model at zero replicas has no PodGroup"
    )
    return [
        Problem(
            join_path("models", model.name, "adopt", model.config.adopt.index("podGroup")),
            f"{why}, so there is nothing to adopt and the hand-made PodGroup stays unmanaged",
            "remove `podGroup` from `adopt` (delete the hand-made PodGroup if nothing uses it)",
            got="podGroup",
        )
    ]


# etcd refuses a request larger than its `--max-request-bytes`, 1.5 MiB by default (etcd
# server/embed/config.go, `DefaultMaxRequestBytes`), so the API server cannot store a bigger object.
# What the pod template carries from the stack file is estimated from the keys that can grow
# without bound; the rest of a workload is a few KiB.
MAX_OBJECT_BYTES = 3 * 2**19
_FIXED_BYTES = 8 * 2**10


def _object_size(model: ModelSpec) -> list[Problem]:
    cfg = model.config
    parts = {
        "env": sum(
            len(k) + len(v if isinstance(v, str) else json.dumps(v.model_dump(by_alias=True))) + 24
            for k, v in cfg.env.items()
        ),
        "engine": sum(len(a) + 3 for a in cfg.engine.extra_args) + len(json.dumps(cfg.engine.hf_overrides)),
        "annotations": sum(len(k) + len(v) + 6 for k, v in cfg.annotations.items()),
        "labels": 2 * sum(len(k) + len(v) + 6 for k, v in cfg.labels.items()),
        "volumes": 120 * len(cfg.volumes) + 80 * len(cfg.networks) + 60 * len(cfg.tolerations),
    }
    templates = 2 if model.multi_node else 1  # a LeaderWorkerSet holds a leader and a worker template
    size = _FIXED_BYTES + templates * sum(parts.values())
    if size <= MAX_OBJECT_BYTES:
        return []
    largest = max(parts, key=lambda key: parts[key])
    return [
        Problem(
            join_path("models", model.name, largest),
            f"the workload (Deployment or LeaderWorkerSet) would be larger than the {MAX_OBJECT_BYTES / 2**20:.1f} MiB "
            f"etcd stores per object (its default request limit), most of it from `{largest}`, so the API server "
            "refuses it",
            "keep large data in a ConfigMap or Secret mounted as a volume, or in the image",
            got=f"about {size / 2**20:.1f} MiB",
        )
    ]


def _parallelism(model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = model.key_path
    problems: list[Problem] = []
    if cfg.multi_node and cfg.resources.gpus == 0:
        problems.append(
            Problem(
                join_path(path, "resources", "gpus"),
                "a multi-node model needs GPUs on every node",
                f"set `resources.gpus`, or use `{model.nodes_key}: 1`",
                got=0,
            )
        )
        return problems
    dp = cfg.data_parallel
    world = cfg.tensor_parallel * cfg.pipeline_parallel * dp
    available = max(cfg.resources.gpus, 1) * cfg.nodes_per_replica
    if cfg.resources.gpus and world != available:
        sizes, product = f"{cfg.tensor_parallel} x {cfg.pipeline_parallel}", "tensorParallelSize x pipelineParallelSize"
        if dp > 1:  # vLLM runs `--data-parallel-size` copies, each over tp x pp GPUs
            sizes, product = f"{sizes} x {dp}", f"{product} x --data-parallel-size"
        per_copy, uneven = divmod(cfg.resources.gpus, dp)
        example = (
            f"(e.g. tp {per_copy} x pp {cfg.nodes_per_replica}" + (f" x dp {dp})" if dp > 1 else ")")
            if not uneven
            else f"({cfg.resources.gpus} GPU(s) per pod do not divide into {dp} copies)"
        )
        problems.append(
            Problem(
                join_path(path, "engine"),
                f"tensor x pipeline{' x data' if dp > 1 else ''} parallel = {sizes} = "
                f"{world}, but {'an instance' if model.serving_role else 'a replica'} has {cfg.resources.gpus} "
                f"GPU(s) x {cfg.nodes_per_replica} node(s) = {available}",
                f"make {product} equal GPUs per pod x {model.nodes_key} {example}",
            )
        )
    return problems


def _one_accelerator_type_per_gang(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A replica of several nodes whose pools hold different accelerators: Volcano may give one gang
    nodes of each (the pods select any of its pools), and vLLM's tensor and pipeline ranks on
    different devices run at the slowest one's pace, or fail where memory or kernels differ."""
    if not model.multi_node or not model.pools or len(model.pools) < 2:
        return []
    types = sorted({spec.pool_types[p] for p in model.pools if p in spec.pool_types})
    if len(types) < 2:
        return []
    return [
        Problem(
            join_path("models", model.name, "pools"),
            f"a replica spans {model.config.nodes_per_replica} nodes, and its pools hold {len(types)} accelerator "
            f"types ({', '.join(types)}): one gang could be given nodes of each",
            "name pools of one accelerator type (`pools.<pool>.accelerator.type`)",
            got=list(model.pools),
        )
    ]


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
        problems += secret_exists(spec, cfg.source.hub.token_secret, join_path(path, "source", "hub", "tokenSecret"))
    return problems


def _zero(value: int | str) -> bool:
    return value == 0 or (isinstance(value, str) and value.rstrip("%").strip() in ("0", ""))


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
