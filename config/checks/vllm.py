"""Checks of a model against its vLLM release: flags the platform sets, removed flags, tool-call
parsers, RoPE overrides and the engine-ready wait."""

from __future__ import annotations

import re

from config.errors import Problem, join_path
from config.spec.model import ModelSpec
from config.upstream.versions import Version, version_text
from config.upstream.vllm_releases import (
    ENGINE_READY_DEFAULT_SECONDS,
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_SINCE,
    OLDEST_KNOWN,
    REMOVED_FLAGS,
    TRANSFORMERS_V5_POSSIBLE,
    TRANSFORMERS_V5_REQUIRED,
)
from config.upstream.vllm_tool_parsers import MODEL_FAMILY_PARSERS, TOOL_PARSERS

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


def check_engine_args(model: ModelSpec) -> list[Problem]:
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


def check_vllm_release(model: ModelSpec) -> list[Problem]:
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


def check_tool_parser(model: ModelSpec) -> list[Problem]:
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


def check_rope(model: ModelSpec) -> list[Problem]:
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
