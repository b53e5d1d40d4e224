"""vLLM command lines and the Ray bootstrap: only flags the image's vLLM accepts, valid shell, RoPE
overrides in the form the image's transformers applies."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from config.upstream.vllm_releases import REMOVED_FLAGS as VLLM_REMOVED_FLAGS
from tests.components.helpers import DEPLOY_MODEL, LWS_MODEL, SEED, container_of, env_of, vllm_argv
from tests.conftest import mutate


@pytest.mark.parametrize("stack", ["aicloud-a", "dev"])
def test_generated_command_lines_have_no_flag_current_vllm_rejects(stack: str, committed_render: Any) -> None:
    result = committed_render(stack)
    for workload in result.rendered.objects:
        if workload.kind not in ("Deployment", "LeaderWorkerSet"):
            continue
        model = result.spec.models[workload.name]
        templates = (
            [workload.manifest["spec"]["template"]]
            if workload.kind == "Deployment"
            else [workload.manifest["spec"]["leaderWorkerTemplate"]["leaderTemplate"]]
        )
        for template in templates:
            argv = vllm_argv(container_of(template))
            for flag, (since, _) in VLLM_REMOVED_FLAGS.items():
                assert flag not in argv or model.vllm_version < since, f"{workload.name}: {flag}"


def _image_of(version: str) -> str:
    """The example cluster's vLLM build at another release (the tag names the release)."""
    return f"10.8.17.100:60066/mars/vllm-mars:{version}-hpcc.ai3.3.0.12-torch2.6-py312-ubuntu22.04-amd64-20251224"


def test_leader_and_worker_scripts_are_valid_shell(committed_render: Any) -> None:
    lws = committed_render("aicloud-a").rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest
    for role in ("leaderTemplate", "workerTemplate"):
        script = container_of(lws["spec"]["leaderWorkerTemplate"][role])["args"][0]
        assert subprocess.run(["sh", "-n", "-c", script], capture_output=True).returncode == 0


# -- what the pinned vLLM releases really do ---------------------------------------------------------


def _deploy_argv(result: Any) -> list[str]:
    return vllm_argv(container_of(result.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest["spec"]["template"]))


def test_the_engine_ready_timeout_is_raised_only_where_vllm_reads_it(committed_render: Any, render_raw: Any) -> None:
    """0.11 hard-codes the 600 s wait: no variable, a warning that names the consequence."""
    example = committed_render("aicloud-a")
    deployment = example.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest
    assert "VLLM_ENGINE_READY_TIMEOUT_S" not in env_of(container_of(deployment["spec"]["template"]))
    warning = next(w for w in example.spec.warnings if w.path == f"models.{DEPLOY_MODEL}.startup.loadTimeoutSeconds")
    assert "waits at most 600 s" in warning.message and "vLLM >= 0.14.0" in warning.fix
    newer = render_raw(mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(image=_image_of("0.14.0"))))
    template = newer.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest["spec"]["template"]
    assert env_of(container_of(template))["VLLM_ENGINE_READY_TIMEOUT_S"] == "900"
    assert not [w for w in newer.spec.warnings if w.path == f"models.{DEPLOY_MODEL}.startup.loadTimeoutSeconds"]


_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.mark.parametrize(
    ("version", "max_model_len", "expected"),
    [
        # Through 0.11 models read `rope_scaling`, and top-level keys apply before vLLM's RoPE patch.
        ("0.11.0", None, {"rope_scaling": _YARN, "rope_theta": 1000000}),
        # From 0.12 models read `rope_parameters`, which the override replaces whole.
        ("0.19.0", None, {"rope_parameters": {**_YARN, "rope_theta": 1000000}}),
        # From 0.30 the extended length is no longer derived from the factor.
        ("0.33.0", 131072, {"rope_parameters": {**_YARN, "rope_theta": 1000000}, "max_position_embeddings": 131072}),
    ],
)
def test_rope_scaling_takes_the_form_the_images_vllm_reads(
    render_raw: Any, version: str, max_model_len: int | None, expected: dict[str, Any]
) -> None:
    def change(raw: dict[str, Any]) -> None:
        model = raw["models"][DEPLOY_MODEL]
        model["image"] = _image_of(version)
        if max_model_len:
            model.setdefault("engine", {})["maxModelLen"] = max_model_len

    argv = _deploy_argv(render_raw(mutate(SEED, change)))
    assert json.loads(argv[argv.index("--hf-overrides") + 1]) == expected


def test_workers_wait_for_the_ray_head_with_a_public_command(committed_render: Any) -> None:
    lws = committed_render("aicloud-a").rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest
    worker = container_of(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"])["args"][0]
    assert 'ray status --address "$LWS_LEADER_ADDRESS:6379"' in worker and "health-check" not in worker
