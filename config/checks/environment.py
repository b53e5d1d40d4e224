"""Checks of a model's environment: what the platform sets already, credentials in plain text, and
variables that override what the platform manages."""

from __future__ import annotations

import re

from config.checks.credentials import secret_exists
from config.credential_shapes import credential_shape
from config.errors import Problem, join_path
from config.sections.models import SecretRef
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.upstream.accelerators import AMD_DEVICE_ENV_MUST_MATCH, AMD_DEVICE_ENV_RAY_REFUSES, AMD_RAY_NOSET_ENV
from config.upstream.interconnects import INTERCONNECTS, NETWORK_PROFILES
from config.upstream.versions import version_text
from config.upstream.vllm_releases import (
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_SINCE,
    RAY_NOSET_BY_VLLM_SINCE,
)

_CREDENTIAL_NAME = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|API_KEY|ACCESS_KEY|PRIVATE_KEY)", re.I)
# Variables LWS injects into every container of a LeaderWorkerSet.
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")


def check_environment(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
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
            problems += secret_exists(spec, value.secret, join_path(var_path, "secret"))
        if isinstance(value, str):
            problems += _managed_env(spec, model, name, value, var_path)
    if model.vendor == "amd":
        problems += _amd_env(model, path)
    for view in model.role_views or (model,):
        problems += _interconnect_env(view, join_path(view.key_path, "env"))
    return problems


def _interconnect_env(model: ModelSpec, path: str) -> list[Problem]:
    """A model whose pods carry an interconnect's variables but sets one otherwise (the model's
    `env` wins over the platform's): `FI_PROVIDER=tcp` beside EFA devices sends NCCL's traffic over
    TCP sockets, and the devices the pod holds sit idle; another `NCCL_SOCKET_IFNAME` or
    `LD_LIBRARY_PATH` beside GPUDirect-TCPXO loses the NCCL plugin or its NICs."""
    wanted: dict[str, tuple[str, str, str]] = {}
    for name, (value, source) in model.interconnect_env.items():
        profile = NETWORK_PROFILES.get(source)
        if profile is not None:
            wanted[name] = (value, f"runs on its pools' {profile.title} network", "or run on another pool")
        else:
            what = INTERCONNECTS[source].name
            wanted[name] = (value, f"holds {what} devices (`{source}`)", f"or request no `{source}`")
    problems: list[Problem] = []
    for name, (value_wanted, why, other) in wanted.items():
        given = model.config.env.get(name)
        if isinstance(given, str) and given != value_wanted:
            problems.append(
                Problem(
                    join_path(path, name),
                    f"the model {why} and sets `{name}={given}` over the `{value_wanted}` the platform sets for it: "
                    "NCCL then does not use the interconnect as its documents describe",
                    f"remove it (the platform sets `{name}={value_wanted}`), {other}",
                    got=given,
                    severity="warning",
                )
            )
    return problems


_OFF = ("", "0", "false", "no", "off")


def _amd_env(model: ModelSpec, path: str) -> list[Problem]:
    """Device variables that stop vLLM or Ray on AMD GPUs (`config.upstream.accelerators`). The device
    plugin already isolates each pod, so none of them is needed."""
    env = {name: value for name, value in model.config.env.items() if isinstance(value, str)}
    problems: list[Problem] = []
    if AMD_DEVICE_ENV_RAY_REFUSES in env:
        problems.append(
            Problem(
                join_path(path, AMD_DEVICE_ENV_RAY_REFUSES),
                f"Ray refuses to start when `{AMD_DEVICE_ENV_RAY_REFUSES}` is set"
                + (", and every replica runs Ray" if model.multi_node else " (vLLM uses Ray for some parallel setups)"),
                "remove it: the AMD device plugin mounts only the pod's GPUs, numbered 0..n-1 inside the pod",
                got=env[AMD_DEVICE_ENV_RAY_REFUSES],
                severity="error" if model.multi_node else "warning",
            )
        )
    hip, cuda = AMD_DEVICE_ENV_MUST_MATCH
    if hip in env and cuda in env and env[hip].replace(" ", "") != env[cuda].replace(" ", ""):
        problems.append(
            Problem(
                join_path(path, hip),
                f"vLLM on ROCm refuses to start when `{hip}` and `{cuda}` differ (got {env[hip]!r} and {env[cuda]!r})",
                f"remove both (the device plugin isolates the pod), or set only `{hip}`",
                got=env[hip],
            )
        )
    noset = env.get(AMD_RAY_NOSET_ENV)
    if (
        model.multi_node
        and model.vllm_version < RAY_NOSET_BY_VLLM_SINCE
        and noset is not None
        and noset.strip().lower() in _OFF
    ):
        problems.append(
            Problem(
                join_path(path, AMD_RAY_NOSET_ENV),
                f"turned off on vLLM {version_text(model.vllm_version)}, Ray pins each worker to one GPU with `{hip}` "
                f"while vLLM pins it to all of the node's with `{cuda}`, and the workers refuse to start "
                "(from vLLM 0.16 on, vLLM sets it itself)",
                "remove it: the platform sets it to `1` for multi-node models on AMD GPUs",
                got=noset,
                severity="warning",
            )
        )
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
