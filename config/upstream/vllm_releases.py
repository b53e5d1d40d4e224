"""What each vLLM release accepts, read from vLLM's own source.

The tables below were derived from the source distributions of every vLLM minor release from 0.8.0
to 0.33.0 on PyPI (and 0.10.2, 0.11.1): the command-line flags each release registers
(`vllm/engine/arg_utils.py` and the API server's `cli_args.py`, including the frontend flags built
from its dataclass fields), the tool-call parsers it registers (`tool_parsers`), the
`transformers` range it requires (`requirements/common.txt`) and the environment variables it
reads (`vllm/envs.py`). A flag, parser or variable that appeared or disappeared between two sampled
releases is dated by the later one, so a patch release in between may already differ."""

from __future__ import annotations

import re
from typing import Final

from config.upstream.versions import Version

CURRENT: Final[Version] = (0, 33)
OLDEST_KNOWN: Final[Version] = (0, 8, 0)
"""Releases before this one were not read; their flags and parsers are not checked."""

# Flags removed from `vllm serve`, with the release that no longer accepts them (an unknown flag
# aborts startup) and what to do instead.
REMOVED_FLAGS: Final[dict[str, tuple[Version, str]]] = {
    "--disable-logprobs-during-spec-decoding": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--ngram-prompt-lookup-max": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--ngram-prompt-lookup-min": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--num-speculative-tokens": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--spec-decoding-acceptance-method": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--speculative-disable-by-batch-size": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--speculative-disable-mqa-scorer": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--speculative-draft-tensor-parallel-size": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--speculative-max-model-len": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--speculative-model": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--speculative-model-quantization": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--typical-acceptance-sampler-posterior-alpha": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--typical-acceptance-sampler-posterior-threshold": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "-spec-draft-tp": ((0, 9, 0), "use `--speculative-config '{...}'`"),
    "--device": ((0, 10, 0), "drop it: the platform is detected"),
    "--enable-reasoning": ((0, 10, 0), "drop it: `--reasoning-parser` alone turns reasoning on"),
    "--long-lora-scaling-factors": ((0, 10, 0), "drop it"),
    "--max-prompt-adapter-token": ((0, 10, 0), "drop it: prompt adapters were removed"),
    "--max-prompt-adapters": ((0, 10, 0), "drop it: prompt adapters were removed"),
    "--prompt-adapters": ((0, 10, 0), "drop it: prompt adapters were removed"),
    "--qlora-adapter-name-or-path": ((0, 10, 0), "drop it"),
    "--tokenizer-pool-extra-config": ((0, 10, 0), "drop it: the tokenizer pool was removed"),
    "--tokenizer-pool-size": ((0, 10, 0), "drop it: the tokenizer pool was removed"),
    "--tokenizer-pool-type": ((0, 10, 0), "drop it: the tokenizer pool was removed"),
    "--use-v2-block-manager": ((0, 10, 0), "drop it: the V1 engine has one block manager"),
    "--enable-prompt-adapter": ((0, 10, 2), "drop it: prompt adapters were removed"),
    "--multi-step-stream-outputs": ((0, 10, 2), "drop it: multi-step scheduling was removed with the V0 engine"),
    "--num-scheduler-steps": ((0, 10, 2), "drop it: multi-step scheduling was removed with the V0 engine"),
    "--override-neuron-config": ((0, 10, 2), "drop it"),
    "--disable-async-output-proc": ((0, 11, 0), "drop it: the V1 engine has no separate output processing switch"),
    "--max-seq-len-to-capture": ((0, 11, 0), "drop it: CUDA graphs are captured by `--compilation-config`"),
    "--preemption-mode": ((0, 11, 0), "drop it: the V1 engine always recomputes"),
    "--scheduler-delay-factor": ((0, 11, 0), "drop it"),
    "--enable-lora-bias": ((0, 11, 1), "drop it"),
    "--rope-scaling": ((0, 11, 1), "use `engine.ropeScaling` (rendered as `--hf-overrides`)"),
    "--rope-theta": ((0, 11, 1), "use `engine.ropeTheta` (rendered as `--hf-overrides`)"),
    "--eplb-log-balancedness": ((0, 12, 0), "use `--eplb-config '{...}'`"),
    "--eplb-step-interval": ((0, 12, 0), "use `--eplb-config '{...}'`"),
    "--eplb-window-size": ((0, 12, 0), "use `--eplb-config '{...}'`"),
    "--guided-decoding-backend": ((0, 12, 0), "use `--structured-outputs-config '{\"backend\": ...}'`"),
    "--guided-decoding-disable-additional-properties": (
        (0, 12, 0),
        "use `--structured-outputs-config '{\"backend\": ...}'`",
    ),
    "--guided-decoding-disable-any-whitespace": ((0, 12, 0), "use `--structured-outputs-config '{\"backend\": ...}'`"),
    "--guided-decoding-disable-fallback": ((0, 12, 0), "use `--structured-outputs-config '{\"backend\": ...}'`"),
    "--lora-extra-vocab-size": ((0, 12, 0), "drop it"),
    "--num-lookahead-slots": ((0, 12, 0), "drop it"),
    "--num-redundant-experts": ((0, 12, 0), "use `--eplb-config '{...}'`"),
    "--override-pooler-config": ((0, 12, 0), "use `--pooler-config`"),
    "--cuda-graph-sizes": ((0, 13, 0), "use `--compilation-config '{\"cudagraph_capture_sizes\": [...]}'`"),
    "--disable-mm-preprocessor-cache": ((0, 13, 0), "use `--mm-processor-cache-gb 0`"),
    "--enable-multimodal-encoder-data-parallel": ((0, 13, 0), "drop it"),
    "--task": ((0, 13, 0), "use `--runner` and `--convert`"),
    "--disable-log-requests": ((0, 17, 0), "drop it: requests are logged only with `--enable-log-requests`"),
    "--logits-processor-pattern": ((0, 17, 0), "drop it"),
    "--swap-space": ((0, 18, 0), "drop it: the V1 engine never used swap space"),
    "--use-gpu-for-pooling-score": ((0, 18, 0), "drop it"),
    "--disable-frontend-multiprocessing": ((0, 19, 0), "drop it"),
    "--max-long-partial-prefills": ((0, 27, 0), "drop it"),
    "--max-num-partial-prefills": ((0, 27, 0), "drop it"),
    "--calculate-kv-scales": ((0, 28, 0), "drop it"),
    "--override-attention-dtype": ((0, 28, 0), "drop it"),
    "--enable-bf16x3-router-gemm": ((0, 30, 0), "drop it"),
    "--enable-mamba-fine-grained-prefix-cache": ((0, 31, 0), "drop it"),
}

ENGINE_READY_TIMEOUT_ENV: Final = "VLLM_ENGINE_READY_TIMEOUT_S"
ENGINE_READY_TIMEOUT_SINCE: Final[Version] = (0, 14, 0)
"""Earlier releases hard-code the wait for the engine (`v1/engine/core_client.py`)."""
ENGINE_READY_DEFAULT_SECONDS: Final = 600

RAY_NOSET_BY_VLLM_SINCE: Final[Version] = (0, 16, 0)
"""From here on vLLM's Ray executor sets the platform's `RAY_EXPERIMENTAL_NOSET_*_VISIBLE_DEVICES`
in every worker's runtime env (`v1/executor/ray_executor.py`; vLLM PR #33308); earlier releases
rely on the image or the pod to set it."""

# RoPE overrides, read from vLLM's own code. Through 0.11.0 every `--hf-overrides` key is applied
# before vLLM's RoPE patch, and models read `rope_scaling`: `{"rope_scaling": {...}, "rope_theta": x}`
# works. From 0.11.1 a dict-valued override (`rope_scaling`, `rope_parameters`) is held back and
# applied after the patch (`ModelConfig._apply_dict_overrides` in vllm/config/model.py), and from
# 0.12.0 models read `config.rope_parameters` (e.g. vllm/model_executor/models/qwen3.py): a
# `rope_scaling` override is then silently ignored on transformers 4 and, on transformers 5, replaces
# the RoPE parameters without the model's `rope_theta`. A complete `rope_parameters` dict (with
# `rope_type` and `rope_theta`) works on both; vLLM's own docs/features/context_extension.md shows
# it from 0.20.0 on.
ROPE_PARAMETERS_SINCE: Final[Version] = (0, 12, 0)
"""From here on the override is `{"rope_parameters": {..., "rope_theta": <model's>}}`."""
ROPE_DICT_AFTER_PATCH_SINCE: Final[Version] = (0, 11, 1)
"""From here on a dict override skips vLLM's normalisation (`type` -> `rope_type`), and the
max-length check reads `rope_type` (a dict with only `type` fails at startup)."""
YARN_LENGTH_NOT_DERIVED_SINCE: Final[Version] = (0, 30, 0)
"""From here on the served length of a scaled model is `max_position_embeddings`, no longer
multiplied by the factor (`_get_and_verify_max_len`, vllm/config/model.py; vLLM PR #56446): the
extended length must be given (`engine.maxModelLen`, rendered as a `max_position_embeddings`
override, as vLLM's 0.33 recipes do)."""
LENGTH_SCALING_ROPE_TYPES: Final = frozenset({"yarn", "deepseek_yarn", "llama3"})


# The vLLM release an image's tag names, by the tag shapes vLLM's and the vendors' images use: the
# official images (`vllm/vllm-openai:v0.11.0`, `:v0.19.0-cu130`), Ascend's (`vllm-ascend:v0.11.0rc1`,
# the `rc` is the plugin's), vendor builds that lead with the version (MetaX `vllm-metax:0.11.0-maca...`,
# Hygon, Intel, the example cluster's `vllm-mars:0.11.0-hpcc...`), anchored at the start so that
# `torch2.6` or a date is never read as one; AMD's ROCm images name it after `vllm` anywhere in the
# tag (`rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210`, older `..._vllm0.8.3_...`). Moving tags (`latest`,
# `nightly`, `nightly-<sha>`, `main`) name no release.
_LEADING_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?=$|[-_.a-z+])")
_ROCM_VERSION = re.compile(r"(?:^|_)vllm_?(\d+)\.(\d+)(?:\.(\d+))?(?=$|[-_.a-z+])")


def image_tag(image: str) -> str | None:
    """The tag of an image reference: after the last `:` of its last path component (a registry's
    port comes earlier), without a digest."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else None


def image_vllm_version(image: str) -> Version | None:
    """The vLLM release an image's tag names, or None when it names none."""
    tag = image_tag(image)
    if not tag:
        return None
    match = _LEADING_VERSION.match(tag) or _ROCM_VERSION.search(tag)
    return tuple(int(part) for part in match.groups() if part is not None) if match else None
