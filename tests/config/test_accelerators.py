"""Accelerators that are not NVIDIA GPUs: the Ray bootstrap, summaries and picture use the
vendor's resource and word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config.upstream.accelerators import VENDORS, vendor_of
from offline.render import write_render
from tests.conftest import load, mutate, problems_of, stack_raw

SEED = stack_raw("aicloud-a")
LWS_MODEL = "qwen2-72b-tenanta"


def _ascend(raw: dict[str, Any]) -> dict[str, Any]:
    """The example cluster with Ascend NPUs instead of its vendor GPUs, running vLLM-Ascend (a MetaX
    build on Ascend nodes is refused)."""
    result: dict[str, Any] = json.loads(json.dumps(raw).replace("mars-tech.com/gpu", "huawei.com/Ascend910"))
    result["modelDefaults"]["image"] = "10.8.17.100:60066/ascend/vllm-ascend:v0.11.0rc1"
    return result


@pytest.mark.parametrize(
    ("resource", "vendor", "ray"),
    [
        ("nvidia.com/gpu", "nvidia", "GPU"),
        ("amd.com/gpu", "amd", "GPU"),
        ("huawei.com/Ascend910", "ascend", "NPU"),
        ("mars-tech.com/gpu", "metax", "GPU"),
        ("example.org/xpu", "other", "GPU"),
    ],
)
def test_the_vendor_follows_from_the_resource(resource: str, vendor: str, ray: str) -> None:
    assert vendor_of(resource).name == vendor and VENDORS[vendor].ray_resource == ray


def _scripts(result: Any) -> tuple[str, str]:
    group = result.rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest["spec"]["leaderWorkerTemplate"]
    return tuple(group[role]["spec"]["containers"][0]["args"][0] for role in ("leaderTemplate", "workerTemplate"))


def test_ascend_npus_join_ray_as_an_npu_resource(render_raw: Any) -> None:
    leader, worker = _scripts(render_raw(_ascend(SEED)))
    assert """ray start --head --port=6379 --num-gpus=0 --resources='{"NPU":8}'""" in leader
    assert """--num-gpus=0 --resources='{"NPU":8}' --disable-usage-stats --block""" in worker


def test_gpus_join_ray_as_gpus(committed_render: Any) -> None:
    leader, worker = _scripts(committed_render("aicloud-a"))
    assert "--num-gpus=8" in leader and "--num-gpus=8" in worker and "--resources" not in leader


def test_the_ray_resource_can_be_set(render_raw: Any) -> None:
    raw = mutate(SEED, lambda r: r["cluster"].update(accelerator={"rayResource": "MACA"}))
    leader, _ = _scripts(render_raw(raw))
    assert """--resources='{"MACA":8}'""" in leader


def test_summaries_and_the_picture_use_the_vendors_word(render_raw: Any, tmp_path: Path) -> None:
    write_render(render_raw(_ascend(SEED)), tmp_path / "out")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| NPUs |" in summary and "NPUs/pod" in summary and "GPUs" not in summary
    assert "1024 NPUs" in (tmp_path / "out" / "topology.svg").read_text()
    other = load(mutate(SEED, lambda r: r["cluster"].update(accelerator={"word": "XPU"})))
    assert other.accelerator.words == "XPUs"


def test_vendor_driver_paths_may_be_mounted_on_their_clusters() -> None:
    volume = {"driver": {"hostPath": "/usr/local/Ascend/driver", "mountPath": "/usr/local/Ascend/driver"}}
    ascend = _ascend(SEED)
    ascend["models"]["qwen8b-preemptor"]["volumes"] = volume
    assert load(ascend).models["qwen8b-preemptor"].config.volumes


def test_the_config_offers_every_known_vendor() -> None:
    from typing import get_args

    from config.sections.cluster import VendorName

    assert list(get_args(VendorName)) == list(VENDORS)


def _amd(raw: dict[str, Any], env: dict[str, str] | None = None, version: str = "0.11.0") -> dict[str, Any]:
    """The example cluster on AMD GPUs, the multi-node model on `version` with `env` (the seed's
    vendor variables dropped)."""
    result: dict[str, Any] = json.loads(json.dumps(raw).replace("mars-tech.com/gpu", "amd.com/gpu"))
    result["modelDefaults"]["image"] = "10.8.17.100:60066/rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210"
    model = result["models"][LWS_MODEL]
    model["env"] = dict(env or {})
    model["image"] = f"10.8.17.100:60066/rocm/vllm:rocm7.0.0_vllm_{version}_20251210"  # a ROCm build of `version`
    return result


def _env_of(result: Any, role: str) -> dict[str, Any]:
    group = result.rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest["spec"]["leaderWorkerTemplate"]
    return {item["name"]: item.get("value") for item in group[role]["spec"]["containers"][0]["env"]}


def test_amd_multi_node_replicas_keep_ray_from_pinning_hip_devices_before_vllm_does_it(render_raw: Any) -> None:
    old = render_raw(_amd(SEED))
    for role in ("leaderTemplate", "workerTemplate"):
        assert _env_of(old, role)["RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES"] == "1"
    new = render_raw(_amd(SEED, version="0.16.0"))
    assert "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES" not in _env_of(new, "leaderTemplate")
    assert "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES" not in _env_of(render_raw(SEED), "leaderTemplate")


@pytest.mark.parametrize(
    ("env", "path", "severity"),
    [
        ({"ROCR_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, "ROCR_VISIBLE_DEVICES", "error"),
        ({"HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "CUDA_VISIBLE_DEVICES": "0,1"}, "HIP_VISIBLE_DEVICES", "error"),
        ({"RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES": "0"}, "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES", "warning"),
    ],
)
def test_amd_device_variables_that_stop_ray_or_vllm_are_named(env: dict[str, str], path: str, severity: str) -> None:
    key = f"models.{LWS_MODEL}.env.{path}"
    if severity == "error":
        assert key in [p.path for p in problems_of(_amd(SEED, env))]
    else:
        assert key in [w.path for w in load(_amd(SEED, env)).warnings]
        # From 0.16 on vLLM sets the switch itself, so turning it off in the pod is harmless.
        assert key not in [w.path for w in load(_amd(SEED, env, version="0.16.0")).warnings]


def test_amd_device_variables_that_agree_pass() -> None:
    env = {"HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    warnings = [w.path for w in load(_amd(SEED, env)).warnings]
    assert not [w for w in warnings if w.startswith(f"models.{LWS_MODEL}.env")]
