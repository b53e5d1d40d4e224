"""What each vLLM release accepts, read from vLLM's own source.

The tables below were derived from the source distributions of every vLLM minor release from 0.8.0
to 0.33.0 on PyPI (and 0.10.2, 0.11.1): the command-line flags each release registers
(`vllm/engine/arg_utils.py` and the API server's `cli_args.py`, including the frontend flags built
from its dataclass fields), the tool-call parsers it registers (`tool_parsers`), the
`transformers` range it requires (`requirements/common.txt`) and the environment variables it
reads (`vllm/envs.py`). A flag, parser or variable that appeared or disappeared between two sampled
releases is dated by the later one, so a patch release in between may already differ."""

from __future__ import annotations

from typing import Final

from config.upstream.versions import Version

# Tool-call parsers (`--tool-call-parser`): the first release registering each, and the release
# that dropped it (None: still registered in the current release). An unknown parser aborts
# startup.
TOOL_PARSERS: Final[dict[str, tuple[Version, Version | None]]] = {
    "apertus": ((0, 22, 0), None),
    "beam": ((0, 33, 0), None),
    "cohere_command3": ((0, 21, 0), None),
    "cohere_command4": ((0, 21, 0), None),
    "deepseek_v3": ((0, 9, 0), None),
    "deepseek_v31": ((0, 10, 2), None),
    "deepseek_v32": ((0, 13, 0), None),
    "deepseek_v4": ((0, 20, 0), None),
    "deepseek_v41": ((0, 30, 0), None),
    "dots": ((0, 28, 0), None),
    "ernie45": ((0, 11, 1), None),
    "functiongemma": ((0, 14, 0), None),
    "gemma4": ((0, 19, 0), None),
    "gigachat3": ((0, 13, 0), None),
    "glm45": ((0, 10, 2), None),
    "glm47": ((0, 14, 0), None),
    "glm4_moe": ((0, 10, 0), (0, 10, 2)),
    "granite": ((0, 8, 0), None),
    "granite-20b-fc": ((0, 8, 0), None),
    "granite4": ((0, 18, 0), None),
    "hermes": ((0, 8, 0), None),
    "hf": ((0, 32, 0), None),
    "hunyuan_a13b": ((0, 10, 0), None),
    "hy_v3": ((0, 20, 0), None),
    "hy_v4": ((0, 29, 0), None),
    "inkling": ((0, 26, 0), None),
    "internlm": ((0, 8, 0), None),
    "jamba": ((0, 8, 0), None),
    "k2_horizon": ((0, 30, 0), None),
    "kimi_k2": ((0, 10, 0), None),
    "kimi_k3": ((0, 27, 0), None),
    "lfm2": ((0, 21, 0), None),
    "ling3": ((0, 28, 0), None),
    "llama3_json": ((0, 8, 0), None),
    "llama4_json": ((0, 9, 0), None),
    "llama4_pythonic": ((0, 9, 0), None),
    "longcat": ((0, 11, 0), None),
    "mimo": ((0, 20, 0), None),
    "minicpm5": ((0, 23, 0), None),
    "minimax": ((0, 10, 0), (0, 24, 0)),
    "minimax_m2": ((0, 11, 1), None),
    "minimax_m3": ((0, 24, 0), None),
    "mistral": ((0, 8, 0), None),
    "muse": ((0, 33, 0), None),
    "muse_glimmer": ((0, 28, 0), None),
    "musespark1x": ((0, 33, 0), None),
    "olmo3": ((0, 11, 1), None),
    "openai": ((0, 10, 2), None),
    "phi4_mini_json": ((0, 9, 0), None),
    "plamo3": ((0, 32, 0), None),
    "poolside_v1": ((0, 21, 0), None),
    "pythonic": ((0, 8, 0), None),
    "qwen3_coder": ((0, 10, 0), None),
    "qwen3_json": ((0, 32, 0), None),
    "qwen3_xml": ((0, 11, 0), None),
    "seed_oss": ((0, 10, 2), None),
    "step3": ((0, 10, 2), None),
    "step3p5": ((0, 16, 0), None),
    "step5": ((0, 33, 0), None),
    "xlam": ((0, 10, 0), None),
}

# Model families and the tool-call parsers that read their tool calls, from vLLM's tool-calling
# guide (`docs/features/tool_calling.md`) and the model publishers' serving docs. Patterns are
# matched, in order, against the model's served name, hub id and weights path (lower case).
MODEL_FAMILY_PARSERS: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (r"qwen3[-_.]?coder", "Qwen3-Coder", ("qwen3_coder", "qwen3_xml")),
    (r"qwen3|qwen2\.5|qwq", "Qwen2.5/Qwen3", ("hermes",)),
    (r"hermes-?[23]", "Hermes", ("hermes",)),
    (r"llama-?4", "Llama 4", ("llama4_pythonic", "llama4_json")),
    (r"llama-?3\.[123]", "Llama 3.1-3.3", ("llama3_json",)),
    (r"granite-?4", "Granite 4", ("granite4",)),
    (r"granite-?3", "Granite 3", ("granite",)),
    (r"mistral|mixtral|ministral", "Mistral", ("mistral",)),
    (r"deepseek-?v3\.1", "DeepSeek-V3.1", ("deepseek_v31",)),
    (r"deepseek-?(v3|r1)", "DeepSeek-V3/R1", ("deepseek_v3",)),
    (r"gpt-?oss", "gpt-oss", ("openai",)),
    (r"kimi-?k2", "Kimi-K2", ("kimi_k2",)),
    (r"glm-?4\.[56]", "GLM-4.5/4.6", ("glm45",)),
    (r"glm-?4\.7", "GLM-4.7", ("glm47",)),
    (r"internlm", "InternLM", ("internlm",)),
    (r"jamba", "Jamba", ("jamba",)),
    (r"xlam", "xLAM", ("xlam",)),
)
