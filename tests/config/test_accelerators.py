"""Accelerators that are not NVIDIA GPUs: the Ray bootstrap, summaries and picture use the
vendor's resource and word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config.upstream.accelerators import VENDORS, vendor_of
from offline.render import write_render
from tests.conftest import load, mutate, stack_raw

SEED = stack_raw("aicloud-a")
LWS_MODEL = "qwen2-72b-tenanta"


def _ascend(raw: dict[str, Any]) -> dict[str, Any]:
    """The example cluster with Ascend NPUs instead of its vendor GPUs."""
    result: dict[str, Any] = json.loads(json.dumps(raw).replace("mars-tech.com/gpu", "huawei.com/Ascend910"))
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
    write_render(render_raw(_ascend(SEED)), tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| NPUs |" in summary and "NPUs/pod" in summary and "GPUs" not in summary
    assert "1024 NPUs" in (tmp_path / "topology.svg").read_text()
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
