"""vLLM command lines (pure): the server's arguments and the Ray bootstrap of multi-node groups.

Only flags current vLLM accepts are generated: RoPE scaling goes through `--hf-overrides` (the
`--rope-scaling` flag is gone) in the form the image's transformers applies, and the Ray backend is
named explicitly because vLLM refuses a world size larger than the local GPUs without it. The Ray
bootstrap is generated rather than taken from the image's helper script, whose location differs
between vLLM images; it advertises each pod's devices the way the vendor's vLLM build looks for
them (Ray GPUs, or a custom resource such as Ascend's `NPU`).
"""

from __future__ import annotations

import json
import shlex

from components.inference.kv_transfer import kv_transfer_arguments
from config.spec.model import ModelSpec
from config.upstream.vllm_releases import (
    LENGTH_SCALING_ROPE_TYPES,
    ROPE_PARAMETERS_SINCE,
    YARN_LENGTH_NOT_DERIVED_SINCE,
)

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def entrypoint(model: ModelSpec) -> list[str]:
    """The executable part of the server command: `vllm serve` or the older API-server module."""
    if model.config.entrypoint == "serve":
        return ["vllm", "serve"]
    return ["python3", "-m", API_SERVER_MODULE]


def server_arguments(model: ModelSpec) -> list[str]:
    """Arguments of the OpenAI-compatible server, with every configured engine argument."""
    cfg = model.config
    engine = cfg.engine
    path = cfg.source.model_path
    argv = [path] if cfg.entrypoint == "serve" else ["--model", path]
    argv += [
        "--host",
        "0.0.0.0",
        "--port",
        str(cfg.port),
        "--served-model-name",
        cfg.served_model_name or model.name,
        "--tensor-parallel-size",
        str(cfg.tensor_parallel),
        "--pipeline-parallel-size",
        str(cfg.pipeline_parallel),
    ]
    if model.multi_node:
        argv += ["--distributed-executor-backend", "ray"]
    if engine.dtype:
        argv += ["--dtype", engine.dtype]
    if engine.max_model_len:
        argv += ["--max-model-len", str(engine.max_model_len)]
    if engine.gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", format(engine.gpu_memory_utilization, "g")]
    if engine.trust_remote_code:
        argv.append("--trust-remote-code")
    if engine.enforce_eager:
        argv.append("--enforce-eager")
    if engine.tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", engine.tool_call_parser]
    overrides = dict(engine.hf_overrides)
    if engine.rope_scaling and model.vllm_version >= ROPE_PARAMETERS_SINCE:
        # Models read `rope_parameters`, which the override replaces whole: the model's theta goes in
        # with the scaling (`config.upstream.vllm_releases`).
        overrides["rope_parameters"] = {**engine.rope_scaling, "rope_theta": _number(engine.rope_theta)}
        rope_type = engine.rope_scaling.get("rope_type")
        if (
            rope_type in LENGTH_SCALING_ROPE_TYPES
            and model.vllm_version >= YARN_LENGTH_NOT_DERIVED_SINCE
            and engine.max_model_len
        ):
            # The served length is no longer derived from the factor: the extended length is given.
            overrides["max_position_embeddings"] = engine.max_model_len
    elif engine.rope_scaling:
        overrides["rope_scaling"] = dict(engine.rope_scaling)
        if engine.rope_theta is not None:
            overrides["rope_theta"] = _number(engine.rope_theta)
    if overrides:
        argv += ["--hf-overrides", json.dumps(overrides, sort_keys=True, separators=(",", ":"))]
    if model.serving_role is not None:
        argv += kv_transfer_arguments(model)
    argv += list(engine.extra_args)
    return argv


def _number(value: float | None) -> float | int | None:
    """1000000.0 -> 1000000, as a model's config.json writes it."""
    return int(value) if value is not None and value.is_integer() else value


def ray_devices(model: ModelSpec) -> str:
    """The `ray start` option that advertises one pod's devices."""
    if model.ray_resource == "GPU":
        return f"--num-gpus={model.gpus_per_pod}"
    resources = json.dumps({model.ray_resource: model.gpus_per_pod}, separators=(",", ":"))
    return f"--num-gpus=0 --resources={shlex.quote(resources)}"


def leader_script(model: ModelSpec) -> str:
    """Start the Ray head, wait (bounded) for the whole group, then serve."""
    cfg = model.config
    timeout = cfg.ray.group_timeout_seconds
    count_nodes = (
        'import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(1 for n in ray.nodes() if n["Alive"]))'
    )
    return "\n".join(
        [
            "set -eu",
            f"ray start --head --port={cfg.ray.port} {ray_devices(model)} --disable-usage-stats",
            f"deadline=$(( $(date +%s) + {timeout} ))",
            f'until [ "$(python3 -c {shlex.quote(count_nodes)} 2>/dev/null || echo 0)" -ge "$LWS_GROUP_SIZE" ]; do',
            '  if [ "$(date +%s)" -ge "$deadline" ]; then',
            f'    echo "only part of the group joined Ray within {timeout}s; restarting the group" >&2',
            "    exit 1",
            "  fi",
            "  sleep 5",
            "done",
            "exec " + shlex.join(entrypoint(model) + server_arguments(model)),
        ]
    )


def worker_script(model: ModelSpec) -> str:
    """Wait (bounded) for the leader's Ray head, join it and block; the container exits if the
    head goes away. Waiting first matters: with `RecreateGroupOnPodRestart` a worker that failed
    because it started before the head would restart the whole group, again and again."""
    cfg = model.config
    timeout = cfg.ray.group_timeout_seconds
    head = f'"$LWS_LEADER_ADDRESS:{cfg.ray.port}"'
    return "\n".join(
        [
            "set -eu",
            f"deadline=$(( $(date +%s) + {timeout} ))",
            f"until ray status --address {head} >/dev/null 2>&1; do",
            '  if [ "$(date +%s)" -ge "$deadline" ]; then',
            f'    echo "the Ray head did not come up within {timeout}s; restarting the group" >&2',
            "    exit 1",
            "  fi",
            "  sleep 5",
            "done",
            f"exec ray start --address={head} {ray_devices(model)} --disable-usage-stats --block",
        ]
    )
