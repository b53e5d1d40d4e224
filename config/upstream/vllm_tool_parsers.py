"""vLLM's tool-call parsers: which release registers each one, and which one each model family needs.

Read from vLLM's own releases on PyPI: the parsers every minor release from 0.6.0 to 0.33.0
registers (`vllm/entrypoints/openai/tool_parsers/*` up to 0.11, the lazy map of
`vllm/tool_parsers/__init__.py` after), dated by the first release that has each name; and the
family table from 0.33.0's recipes and tool-calling guide. An unknown parser aborts startup, a wrong
one turns every tool call into plain text."""

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
    "glm45": ((0, 10, 1), None),
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
    "llama4_json": ((0, 8, 5), None),
    "llama4_pythonic": ((0, 9, 0), None),
    "longcat": ((0, 11, 0), None),
    "mimo": ((0, 20, 0), None),
    "minicpm5": ((0, 23, 0), None),
    "minimax": ((0, 9, 2), (0, 24, 0)),
    "minimax_m2": ((0, 11, 1), None),
    "minimax_m3": ((0, 24, 0), None),
    "mistral": ((0, 8, 0), None),
    "muse": ((0, 33, 0), None),
    "muse_glimmer": ((0, 28, 0), None),
    "musespark1x": ((0, 33, 0), None),
    "olmo3": ((0, 11, 1), None),
    "openai": ((0, 10, 2), None),
    "phi4_mini_json": ((0, 8, 3), None),
    "plamo3": ((0, 32, 0), None),
    "poolside_v1": ((0, 21, 0), None),
    "pythonic": ((0, 8, 0), None),
    "qwen3_coder": ((0, 10, 0), None),
    "qwen3_json": ((0, 32, 0), None),
    "qwen3_xml": ((0, 11, 0), None),
    "seed_oss": ((0, 10, 2), None),
    "step3": ((0, 10, 1), None),
    "step3p5": ((0, 16, 0), None),
    "step5": ((0, 33, 0), None),
    "xlam": ((0, 9, 2), None),
}

# Model families and the tool-call parsers that read their tool calls, as of vLLM 0.33.0: from the
# recipes shipped in its source distribution (`recipes/models/<publisher>/<model>.yaml`, the
# `tool_calling` args; "R" below) and `docs/features/tool_calling.md` ("D"). Patterns are matched, in
# order, against the model's served name, hub id and weights path, lower-cased: the first match
# wins, so the most specific family comes first (Qwen3-Coder and Qwen3.x before Qwen3; DeepSeek-V3.2
# and V3.1 before V3; Granite 20B FC before Granite). An empty tuple is a family with no documented
# parser: a parser set for it is not judged.
MODEL_FAMILY_PARSERS: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (r"xlam", "xLAM", ("xlam",)),  # D "xLAM Models"
    (r"(^|/)(nous-?)?hermes-?[23]", "Hermes", ("hermes",)),  # D "Hermes Models"
    (r"qwen3[.-]?coder", "Qwen3-Coder", ("qwen3_coder", "qwen3_xml")),  # R Qwen/Qwen3-Coder-480B-A35B-Instruct
    (r"qwen3\.[5-9]", "Qwen3.5-3.8", ("qwen3_coder",)),  # R Qwen/Qwen3.5-*, Qwen3.6-*, Qwen3.8-*
    (r"qwen3-next", "Qwen3-Next", ("hermes",)),  # R Qwen/Qwen3-Next-80B-A3B-Instruct
    (r"qwq", "QwQ", ("hermes",)),  # D "Qwen Models"; R Qwen/QwQ-32B
    (r"qwen3(?![.\d])", "Qwen3", ("hermes",)),  # R Qwen/Qwen3-8B and the other Qwen3 recipes
    (r"qwen2\.5", "Qwen2.5", ("hermes",)),  # D "Qwen Models"
    (r"intern-?s2", "Intern-S2", ("qwen3_coder",)),  # R internlm/Intern-S2-Preview
    (r"deepseek-v4[.-]1", "DeepSeek-V4.1", ("deepseek_v41",)),  # R deepseek-ai/DeepSeek-V4.1-Flash
    (r"deepseek-v4", "DeepSeek-V4", ("deepseek_v4",)),  # R deepseek-ai/DeepSeek-V4-Pro
    (r"deepseek-v3[.-]2", "DeepSeek-V3.2", ("deepseek_v32",)),  # R deepseek-ai/DeepSeek-V3.2
    (r"deepseek-v3[.-]1", "DeepSeek-V3.1", ("deepseek_v31",)),  # D "DeepSeek-V3.1 Models"
    (r"deepseek-r1-distill", "DeepSeek-R1 distills", ()),  # no recipe or doc names a parser
    (r"deepseek-r1", "DeepSeek-R1", ("deepseek_v3",)),  # R deepseek-ai/DeepSeek-R1; D "DeepSeek-V3 Models"
    (r"deepseek-v3", "DeepSeek-V3", ("deepseek_v3",)),  # D "DeepSeek-V3 Models"
    (r"llama-?4", "Llama 4", ("llama4_pythonic", "llama4_json")),  # D "Llama Models"
    (r"llama-?3[.-][123]", "Llama 3.1-3.3", ("llama3_json",)),  # D "Llama Models"
    (r"magistral|ministral|mixtral|mistral|devstral|codestral|pixtral", "Mistral", ("mistral",)),  # D, R mistralai/*
    (r"granite-20b-functioncalling", "Granite 20B FC", ("granite-20b-fc",)),  # D "IBM Granite"
    (r"granite-4", "Granite 4", ("granite4",)),  # D "IBM Granite"
    (r"granite-3", "Granite 3", ("granite",)),  # D "IBM Granite"
    (r"gpt-oss", "gpt-oss", ("openai",)),  # D "OpenAI OSS Models"; R openai/gpt-oss-*
    (r"kimi-k3", "Kimi-K3", ("kimi_k3",)),  # R moonshotai/Kimi-K3
    (r"kimi-k2", "Kimi-K2", ("kimi_k2",)),  # D "Kimi-K2 Models"; R moonshotai/Kimi-K2-*
    (r"glm-4\.[56]", "GLM-4.5/4.6", ("glm45",)),  # D "GLM-4.5 Models"
    (r"glm-4\.7|glm-5", "GLM-4.7/5", ("glm47",)),  # D "GLM-4.7 Models"; R zai-org/GLM-5*
    (r"internlm2|intern-?s1", "InternLM", ("internlm",)),  # D "InternLM Models"; R internlm/Intern-S1
    (r"jamba", "Jamba", ("jamba",)),  # D "Jamba Models"
    (r"minimax-m3", "MiniMax-M3", ("minimax_m3",)),  # R MiniMaxAI/MiniMax-M3
    (r"minimax-m2", "MiniMax-M2", ("minimax_m2",)),  # R MiniMaxAI/MiniMax-M2
    (r"minimax-m1", "MiniMax-M1", ("minimax",)),  # D @0.23.0 "MiniMax Models" (parser gone in 0.24)
    (r"functiongemma", "FunctionGemma", ("functiongemma",)),  # D "FunctionGemma Models"
    (r"gemma-?4|diffusiongemma", "Gemma 4", ("gemma4",)),  # R Google/gemma-4-*
    (r"hunyuan-a13b", "Hunyuan-A13B", ("hunyuan_a13b",)),  # D "Hunyuan Models"
    (r"(^|/)hy4\b", "Hy4", ("hy_v4",)),  # R tencent/Hy4-preview
    (r"(^|/)hy3\b", "Hy3", ("hy_v3",)),  # R tencent/Hy3
    (r"phi-4-mini-instruct", "Phi-4-mini", ("phi4_mini_json",)),  # parser docstring @0.33.0
    (r"seed-oss", "Seed-OSS", ("seed_oss",)),  # R ByteDance-Seed/Seed-OSS-36B-Instruct
    (r"step-?3[.p][57]", "Step-3.5/3.7", ("step3p5",)),  # D "Step-3.5 and Step-3.7 Models"
    (r"step-?5", "Step-5", ("step5",)),  # R stepfun-ai/Step-5-Preview
    (r"(^|/)step-?3(?![.p\d])", "Step3", ("step3",)),  # registry @0.33.0
    (r"nemotron-3", "Nemotron-3", ("qwen3_coder",)),  # R nvidia/NVIDIA-Nemotron-3-*
    (r"mimo-v2", "MiMo-V2", ("mimo",)),  # R XiaomiMiMo/MiMo-V2-Flash
)
