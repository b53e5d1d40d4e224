"""The LeaderWorkerSet controller install and its gang-scheduling mode."""

from __future__ import annotations

from typing import Any

from components.scheduling.lws import lws_values
from config.sections.lws import LwsConfig
from config.sections.stack import StackConfig
from config.spec.images import lws_chart
from offline.check import unknown_value_keys
from tests.conftest import load, mutate, paths_of, stack_raw

SEED = stack_raw("aicloud-a")
LWS_MODEL = "qwen2-72b-tenanta"


def test_installed_when_a_model_spans_nodes(committed_render: Any) -> None:
    release = next(r for r in committed_render("aicloud-a").rendered.releases if r.data["release"] == "lws")
    # The example cluster is air-gapped: chart, image and pull secret all come from its mirror.
    assert release.data["chart"] == "oci://10.8.17.100:60066/charts/lws" and release.data["repository"] is None
    assert release.data["version"] == "0.10.0" and release.data["namespace"] == "lws-system"
    assert release.data["values"] == {
        "replicaCount": 1,
        "image": {"manager": {"repository": "10.8.17.100:60066/lws/lws"}},
        "imagePullSecrets": [{"name": "mars-registry"}],
    }
    index = {e["urn"].split("::")[-1]: e for e in committed_render("aicloud-a").rendered.index}
    assert index["lws-release"]["protect"] is True
    assert [r.data["release"] for r in committed_render("dev").rendered.releases] == ["volcano"]


def test_not_installed_when_managed_elsewhere(render_raw: Any) -> None:
    result = render_raw(mutate(SEED, lambda r: r.update(lws={"install": False})))
    assert [r.data["release"] for r in result.rendered.releases] == ["volcano"]
    assert result.rendered.find("LeaderWorkerSet", LWS_MODEL, "a01")


def test_gang_scheduling_mode_leaves_podgroups_to_lws(render_raw: Any) -> None:
    raw = mutate(SEED, lambda r: r.update(lws={"gangScheduling": True}))
    del raw["models"][LWS_MODEL]["topology"]
    result = render_raw(raw)
    release = next(r for r in result.rendered.releases if r.data["release"] == "lws")
    assert release.data["values"]["gangSchedulingManagement"] == {"schedulerProvider": "volcano"}
    assert result.rendered.by_kind("PodGroup") == []
    lws = result.rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest
    assert lws["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "tenanta"
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["annotations"]
    assert "scheduling.k8s.io/group-name" not in leader


def test_gang_scheduling_mode_refuses_topology_constraints() -> None:
    raw = mutate(SEED, lambda r: r.update(lws={"gangScheduling": True}))
    assert f"models.{LWS_MODEL}.topology" in paths_of(raw)


def _stack(**lws: Any) -> StackConfig:
    return StackConfig.model_validate({"lws": lws})


def test_image_mirror_and_replicas() -> None:
    values = lws_values(_stack(imageRepository="mirror.local/lws/lws", replicas=2))
    assert values == {"replicaCount": 2, "image": {"manager": {"repository": "mirror.local/lws/lws"}}}
    public = lws_values(_stack())
    assert public == {"replicaCount": 1} and lws_chart(_stack()).chart == "oci://registry.k8s.io/lws/charts/lws"


def test_values_keys_exist_in_the_upstream_chart() -> None:
    values = lws_values(_stack(imageRepository="m/lws", imagePullSecret="r", gangScheduling=True, replicas=2))
    assert unknown_value_keys("lws", LwsConfig().version, values) == []
    assert unknown_value_keys("lws", LwsConfig().version, {"replicas": 2}) == ["replicas"]


def test_spec_reports_whether_lws_is_installed() -> None:
    assert load(SEED).lws_install is True
    assert load(stack_raw("dev")).lws_install is False


def test_the_list_of_generated_values_is_what_the_program_generates() -> None:
    from config.checks.installs import GENERATED_LWS_VALUES

    values = lws_values(_stack(imageRepository="m/lws", imagePullSecret="r", gangScheduling=True))
    assert set(values) == set(GENERATED_LWS_VALUES)
