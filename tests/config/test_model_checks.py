"""Checks of each model: parallelism, vLLM flags and parsers of the image's release, credentials, images and volumes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from config import ConfigError
from config.upstream.vllm_releases import REMOVED_FLAGS as VLLM_REMOVED_FLAGS
from config.upstream.vllm_releases import image_vllm_version
from tests.components.helpers import DEPLOY_MODEL, LWS_MODEL, SEED, with_volumes
from tests.conftest import load, mutate, paths_of, problems_of

# -- model config checks --------------------------------------------------------------------------


def test_parallelism_must_match_the_gpus_of_a_replica() -> None:
    problem = next(
        p
        for p in problems_of(mutate(SEED, lambda r: r["models"][LWS_MODEL]["engine"].update(tensorParallelSize=4)))
        if p.path == f"models.{LWS_MODEL}.engine"
    )
    assert "4 x 2 = 8, but a replica has 8 GPU(s) x 2 node(s) = 16" in problem.message
    assert (
        load(
            mutate(
                SEED, lambda r: r["models"][LWS_MODEL]["engine"].update(tensorParallelSize=16, pipelineParallelSize=1)
            )
        )
        .models[LWS_MODEL]
        .config.tensor_parallel
        == 16
    )


@pytest.mark.parametrize("flag", [["--data-parallel-size", "2"], ["--data-parallel-size=2"], ["-dp", "2"]])
def test_data_parallelism_counts_in_the_gpus_of_a_replica(flag: list[str]) -> None:
    """vLLM runs `--data-parallel-size` copies of the model, each over tp x pp GPUs: DP 2 x TP 4 is
    the 8 GPUs of one node, and DP 2 x TP 8 is twice what it has."""

    def engine(tp: int) -> Any:
        def change(raw: dict[str, Any]) -> None:
            raw["models"][DEPLOY_MODEL]["resources"]["gpus"] = 8
            raw["models"][DEPLOY_MODEL]["engine"].update(tensorParallelSize=tp, extraArgs=flag)

        return change

    assert f"models.{DEPLOY_MODEL}.engine" not in paths_of_or_none(mutate(SEED, engine(4)))
    problem = next(p for p in problems_of(mutate(SEED, engine(8))) if p.path == f"models.{DEPLOY_MODEL}.engine")
    assert "tensor x pipeline x data parallel = 8 x 1 x 2 = 16" in problem.message
    assert "e.g. tp 4" in problem.fix


def paths_of_or_none(raw: dict[str, Any]) -> list[str]:
    """The problems' key paths, or none where the stack loads."""
    try:
        load(raw)
    except ConfigError as error:
        return [p.path for p in error.problems]
    return []


def test_removed_flags_are_rejected_for_current_vllm_only() -> None:
    args = ["--swap-space", "16"]
    old = mutate(SEED, lambda r: r["models"][LWS_MODEL]["engine"].update(extraArgs=args))
    assert load(old).models[LWS_MODEL].vllm_version == (0, 11, 0)  # read from the image tag
    new = mutate(old, lambda r: r["models"][LWS_MODEL].update(vllmVersion="0.33.0"))
    problem = next(p for p in problems_of(new) if p.path == f"models.{LWS_MODEL}.engine.extraArgs[0]")
    assert "removed in vLLM 0.18" in problem.message
    rope = mutate(
        SEED,
        lambda r: r["models"][DEPLOY_MODEL].update(
            image="vllm/vllm-openai:v0.33.0", engine={"extraArgs": ["--rope-scaling={}"]}
        ),
    )
    assert f"models.{DEPLOY_MODEL}.engine.extraArgs[0]" in paths_of(rope)


def test_flags_the_platform_sets_are_not_repeated() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["engine"].update(extraArgs=["--port=9000", "-tp", "1"]))
    paths = paths_of(raw)
    assert (
        f"models.{DEPLOY_MODEL}.engine.extraArgs[0]" in paths and f"models.{DEPLOY_MODEL}.engine.extraArgs[1]" in paths
    )


def test_topology_constraints_need_a_multi_node_model() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(topology={"mode": "soft"}))
    assert f"models.{DEPLOY_MODEL}.topology" in paths_of(raw)


def test_plain_text_credentials_in_env_are_refused() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["env"].update(HF_API_TOKEN="hf_secret_value"))
    problem = next(p for p in problems_of(raw) if p.path == f"models.{DEPLOY_MODEL}.env.HF_API_TOKEN")
    assert "hf_secret_value" not in str(problem) and "pulumi config set --secret" in problem.fix


def test_unpinned_images_are_refused() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(image="vllm/vllm-openai:latest"))
    assert f"models.{DEPLOY_MODEL}.image" in paths_of(raw)


def test_env_the_platform_sets_is_reserved_only_where_it_sets_it() -> None:
    raw = mutate(SEED, lambda r: r["secrets"].update({"hf-token": "x"}))
    raw["models"][DEPLOY_MODEL]["env"]["HF_TOKEN"] = {"secret": "hf-token"}
    raw["models"][DEPLOY_MODEL]["env"]["VLLM_HOST_IP"] = "10.0.0.1"
    assert load(raw).models[DEPLOY_MODEL].config.env["VLLM_HOST_IP"] == "10.0.0.1"
    raw["models"][LWS_MODEL]["env"]["VLLM_HOST_IP"] = "10.0.0.1"
    assert paths_of(raw) == [f"models.{LWS_MODEL}.env.VLLM_HOST_IP"]


def test_rope_scaling_without_theta_is_refused_on_transformers_v5_images() -> None:
    image = "10.8.17.100:60066/mars/vllm-mars:0.33.0-hpcc"  # a vLLM 0.33.0 build (transformers 5)
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(image=image))
    del raw["models"][DEPLOY_MODEL]["engine"]["ropeTheta"]
    assert paths_of(raw) == [f"models.{DEPLOY_MODEL}.engine.ropeTheta"]
    raw["models"][DEPLOY_MODEL]["engine"] = {"hfOverrides": {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}}
    assert f"models.{DEPLOY_MODEL}.engine.hfOverrides.rope_scaling" in paths_of(raw)


@pytest.mark.parametrize("flag", sorted(VLLM_REMOVED_FLAGS))
def test_every_removed_flag_is_refused_from_its_release_on(flag: str) -> None:
    since = VLLM_REMOVED_FLAGS[flag][0]
    before = (since[0], since[1] - 1, 0) if since[1] else (0, 7, 0)
    for version, refused in ((since, True), (before, False)):
        raw = mutate(SEED, lambda r, v=version: r["models"][DEPLOY_MODEL].update(vllmVersion=".".join(map(str, v))))
        raw["models"][DEPLOY_MODEL]["engine"]["extraArgs"] = [flag]
        raw["models"][DEPLOY_MODEL]["engine"].pop("toolCallParser")
        raw["models"][DEPLOY_MODEL]["engine"].pop("ropeScaling")
        paths = [p.path for p in problems_of(raw)] if refused else [p.path for p in _errors_or_none(raw)]
        assert (f"models.{DEPLOY_MODEL}.engine.extraArgs[0]" in paths) is refused, (flag, version)


def _errors_or_none(raw: dict[str, Any]) -> list[Any]:
    try:
        load(raw)
    except Exception as error:
        return list(getattr(error, "problems", []))
    return []


def test_an_unreadable_vllm_version_is_a_warning_naming_vllm_version() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(image="10.8.17.100:60066/mars/vllm-mars:prod"))
    spec = load(raw)
    (warning,) = [w for w in spec.warnings if w.path == f"models.{DEPLOY_MODEL}.image"]
    assert "names no vLLM release" in warning.message and "`vllmVersion`" in warning.fix
    # The fix names no version: one written there would read like a detected value.
    assert not re.search(r"\d+\.\d+\.\d+", warning.fix)
    assert not spec.models[DEPLOY_MODEL].vllm_version_known


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("vllm/vllm-openai:v0.11.0", (0, 11, 0)),
        ("vllm/vllm-openai:v0.19.0-cu130", (0, 19, 0)),
        ("rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210", (0, 11, 2)),
        ("rocm/vllm:rocm6.3.1_instinct_vllm0.8.3_20250410", (0, 8, 3)),
        ("quay.io/ascend/vllm-ascend:v0.11.0rc1", (0, 11, 0)),
        (
            "10.8.17.100:60066/mars/vllm-mars:0.11.0-hpcc.ai3.3.0.12-torch2.6-py312-ubuntu22.04-amd64-20251224",
            (0, 11, 0),
        ),
        ("cr.metax-tech.com/public-ai-release/vllm-metax:0.10.2-maca.ai3.2.1.7-torch2.6-py310", (0, 10, 2)),
        ("registry:5000/vllm/vllm-openai:v0.33.0@sha256:" + "0" * 64, (0, 33, 0)),
        ("vllm/vllm-openai:latest", None),
        ("vllm/vllm-openai:nightly-0123abc", None),
        ("rocm/vllm-dev:nightly_main_20251201", None),
        ("registry:5000/mars/vllm-mars", None),
        ("mars/vllm-mars:torch2.6-20251224", None),
    ],
)
def test_the_vllm_release_is_read_from_the_tag_shapes_images_use(image: str, version: tuple[int, ...] | None) -> None:
    assert image_vllm_version(image) == version


@pytest.mark.parametrize(
    ("hub_id", "right", "wrong"),
    [
        ("Qwen/Qwen3.5-35B-A3B", "qwen3_coder", "hermes"),
        ("Qwen/Qwen3.8-27B", "qwen3_coder", "hermes"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "hermes", "qwen3_coder"),
        ("deepseek-ai/DeepSeek-V3.2", "deepseek_v32", "deepseek_v3"),
        ("deepseek-ai/DeepSeek-V4-Pro", "deepseek_v4", "deepseek_v3"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek_v31", "deepseek_v3"),
        ("ibm-granite/granite-4.0-h-small", "granite4", "granite"),
    ],
)
def test_the_family_table_follows_vllms_own_recipes(hub_id: str, right: str, wrong: str) -> None:
    """vLLM 0.33's recipes (`recipes/models/<publisher>/<model>.yaml`): the right parser passes
    without a word, the wrong one is warned about, naming the right one."""

    def served(parser: str) -> dict[str, Any]:
        def change(raw: dict[str, Any]) -> None:
            model = raw["models"][DEPLOY_MODEL]
            model.update(image="vllm/vllm-openai:v0.33.0", servedModelName=hub_id.split("/")[1].lower())
            model["source"] = {"hub": {"id": hub_id}}
            model["engine"] = {**model["engine"], "toolCallParser": parser}
            model["engine"].pop("ropeScaling", None)

        return mutate(SEED, change)

    parser_warnings = [w for w in load(served(right)).warnings if w.path.endswith("toolCallParser")]
    assert parser_warnings == []
    (warning,) = [w for w in load(served(wrong)).warnings if w.path.endswith("toolCallParser")]
    assert f"`{right}`" in warning.fix


def test_tool_call_parsers_must_exist_and_match_the_model_family() -> None:
    wrong = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["engine"].update(toolCallParser="granite"))
    (warning,) = [w for w in load(wrong).warnings if w.path.endswith("toolCallParser")]
    assert "Qwen3 models" in warning.message and "`hermes`" in warning.fix
    unknown = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["engine"].update(toolCallParser="qwen3_json"))
    (error,) = problems_of(unknown)  # registered only from vLLM 0.32 on; the model runs 0.11
    assert error.path == f"models.{DEPLOY_MODEL}.engine.toolCallParser" and "hermes" in error.fix


@pytest.mark.parametrize(
    ("volume", "path"),
    [
        ({"hostPath": "/", "mountPath": "/host"}, "volumes.v.hostPath"),
        ({"hostPath": "/etc/kubernetes", "mountPath": "/k"}, "volumes.v.hostPath"),
        ({"hostPath": "/usr/local/Ascend/driver", "mountPath": "/d"}, "volumes.v.hostPath"),  # not an Ascend cluster
        ({"hostPath": "/data/../etc", "mountPath": "/d"}, "volumes.v.hostPath"),
        ({"hostPath": "/data/x", "mountPath": "relative"}, "volumes.v.mountPath"),
        ({"hostPath": "/data/x", "pvc": "p", "mountPath": "/d"}, "volumes.v"),
        ({"configMap": "c", "mountPath": "/dev/shm"}, "volumes.v.mountPath"),
        ({"configMap": "c", "mountPath": "/workspace/model"}, "volumes.v.mountPath"),
    ],
)
def test_dangerous_or_clashing_volumes_are_refused(volume: dict[str, Any], path: str) -> None:
    assert f"models.{DEPLOY_MODEL}.{path}" in paths_of(with_volumes({"v": volume}))


def test_platform_volume_names_are_reserved() -> None:
    assert f"models.{DEPLOY_MODEL}.volumes.dshm" in paths_of(
        with_volumes({"dshm": {"configMap": "c", "mountPath": "/c"}})
    )
