"""Checks of a model against its vLLM release: flags the platform sets, removed flags, tool-call
parsers, RoPE overrides and the engine-ready wait."""

from __future__ import annotations

import re

from config.errors import Problem, join_path
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.upstream.accelerators import vendor_of
from config.upstream.versions import Version, version_text, version_tuple
from config.upstream.vllm_releases import (
    ENGINE_READY_DEFAULT_SECONDS,
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_SINCE,
    LENGTH_SCALING_ROPE_TYPES,
    OLDEST_KNOWN,
    REMOVED_FLAGS,
    ROPE_DICT_AFTER_PATCH_SINCE,
    ROPE_PARAMETERS_SINCE,
    YARN_LENGTH_NOT_DERIVED_SINCE,
    image_tag,
    image_vllm_version,
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
        if arg.startswith("-") and len(flag.split()) > 1:
            name, value = flag.split(None, 1)
            problems.append(
                Problem(
                    join_path(path, index),
                    f"one item holds two tokens: the argument reaches vLLM as the single word `{arg}`, an unknown "
                    "flag, and the server exits at start",
                    f"write `{name}={value}`, or `{name}` and `{value}` as two items",
                    got=arg,
                )
            )
            continue
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
                "the image tag names no vLLM release the platform can read, so its flags, tool-call parser "
                f"and RoPE form were checked against vLLM {version}, the newest release it knows",
                "set `vllmVersion` to the release the image runs (`python3 -c 'import vllm; "
                "print(vllm.__version__)'` inside the image prints it)",
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


# What an image's name says it was built for. Official vLLM images (`vllm/vllm-openai`, and tags
# such as `v0.19.0-cu130`) are CUDA builds for NVIDIA GPUs; AMD's are `rocm/vllm*` (or carry `rocm` in
# the tag); vLLM-Ascend's are `quay.io/ascend/vllm-ascend`; vendor builds name their stack
# (`vllm-metax`, `vllm-mars`). A name that says none of these is not checked.
IMAGE_BUILDS: tuple[tuple[re.Pattern[str], str, frozenset[str]], ...] = (
    (re.compile(r"ascend"), "an Ascend (CANN) build", frozenset({"ascend"})),
    (re.compile(r"rocm"), "a ROCm build", frozenset({"amd"})),
    (re.compile(r"metax|maca|mars"), "a MetaX (MACA) build", frozenset({"metax"})),
    # MetaX's MACA stack is CUDA-compatible (`config.upstream.accelerators`), so CUDA builds are not
    # refused there.
    (re.compile(r"(^|/)vllm-openai(:|$)|[:_-]cu\d{3}\b"), "a CUDA build", frozenset({"nvidia", "metax"})),
)


def image_build(image: str) -> tuple[str, frozenset[str]] | None:
    """(what the image is built for, the vendors it runs on), when its name says."""
    text = image.split("@", 1)[0].lower()
    for pattern, build, vendors in IMAGE_BUILDS:
        if pattern.search(text):
            return build, vendors
    return None


def check_image_build(model: ModelSpec) -> list[Problem]:
    """The image runs on the model's accelerator, and its tag agrees with `vllmVersion`."""
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    build = image_build(cfg.image)
    if build is not None and model.vendor != "other" and model.vendor not in build[1]:
        problems.append(
            Problem(
                join_path(path, "image"),
                f"the image is {build[0]}, but the model's devices (`{model.gpu_resource}`) are {model.vendor}: its "
                "vLLM finds no device it can use and exits at start",
                f"use a vLLM image built for {model.vendor}",
                got=cfg.image,
            )
        )
    tagged = image_vllm_version(cfg.image)
    if cfg.vllm_version is not None and tagged is not None:
        stated = version_tuple(cfg.vllm_version)
        if stated != tagged[: len(stated)] and tagged != stated[: len(tagged)]:
            problems.append(
                Problem(
                    join_path(path, "vllmVersion"),
                    f"`vllmVersion` says {version_text(stated)}, but the image tag `{image_tag(cfg.image)}` names vLLM "
                    f"{version_text(tagged)}: flags, parsers and metrics would be checked against the wrong release",
                    "remove `vllmVersion` (the tag says it), or correct the one that is wrong",
                    got=cfg.vllm_version,
                )
            )
    return problems


def check_accelerator(spec: PlatformSpec) -> list[Problem]:
    """`cluster.accelerator.vendor` against the vendor whose device plugin advertises `gpuResource`."""
    chosen = spec.config.cluster.accelerator.vendor
    found = vendor_of(spec.gpu_resource)
    if chosen is None or found.name == "other" or chosen == found.name:
        return []
    return [
        Problem(
            "cluster.accelerator.vendor",
            f"`{spec.gpu_resource}` is advertised by the {found.name} device plugin, not {chosen}: the Ray resource, "
            "the device variable and the driver paths would be the wrong vendor's",
            f"remove `vendor` (it follows from `gpuResource`: {found.name}), or correct `cluster.gpuResource`",
            got=chosen,
        )
    ]


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
    if family is not None and family[1] and parser not in family[1]:
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
    """RoPE overrides in the form the image's vLLM applies: `rope_parameters` with the model's
    `rope_theta` from 0.12 on (the facts are in `config.upstream.vllm_releases`)."""
    engine = model.config.engine
    path = join_path("models", model.name, "engine")
    version = model.vllm_version
    text = version_text(version)
    problems: list[Problem] = []
    scaling = engine.rope_scaling or {}
    if scaling and version >= ROPE_PARAMETERS_SINCE and engine.rope_theta is None:
        problems.append(
            Problem(
                join_path(path, "ropeTheta"),
                f"vLLM {text} reads RoPE from `rope_parameters`, which the override replaces whole; without the "
                "model's `rope_theta` the base falls back to a default (10000 for Llama) and outputs silently degrade",
                "add `ropeTheta` with the model's `rope_theta` from its config.json (e.g. 1000000 for Qwen3)",
            )
        )
    if scaling and "rope_type" not in scaling and version >= ROPE_DICT_AFTER_PATCH_SINCE:
        problems.append(
            Problem(
                join_path(path, "ropeScaling"),
                f"vLLM {text} applies the override after its own RoPE fix-ups, so a legacy `type` key is not renamed "
                "and the server fails at startup when it reads `rope_type`",
                "name the scaling `rope_type` (e.g. `rope_type: yarn`)",
                got=scaling,
            )
        )
    for key in ("rope_scaling", "rope_parameters"):
        if key in engine.hf_overrides and version >= ROPE_PARAMETERS_SINCE:
            problems.append(
                Problem(
                    join_path(path, "hfOverrides", key),
                    f"on vLLM {text} a hand-written `{key}` override is applied after vLLM's RoPE fix-ups"
                    + (
                        ": models read `rope_parameters`, so it is ignored on transformers 4"
                        if key == "rope_scaling"
                        else ", replacing every RoPE parameter it does not name"
                    ),
                    "use `engine.ropeScaling` with `engine.ropeTheta`, which render a complete `rope_parameters`",
                )
            )
    rope_type = str(scaling.get("rope_type", scaling.get("type", "")))
    if rope_type in LENGTH_SCALING_ROPE_TYPES and version >= YARN_LENGTH_NOT_DERIVED_SINCE and not engine.max_model_len:
        problems.append(
            Problem(
                join_path(path, "maxModelLen"),
                f"from vLLM {version_text(YARN_LENGTH_NOT_DERIVED_SINCE)} the served length of a `{rope_type}`-scaled "
                "model is the model's `max_position_embeddings`, no longer multiplied by the factor: without a "
                "length the scaling serves no longer context",
                "set `engine.maxModelLen` to the extended length (rendered as a `max_position_embeddings` override)",
                severity="warning",
            )
        )
    return problems
