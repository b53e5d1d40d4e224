"""Where images and charts come from: a mirror for air-gapped clusters, OCI chart sources, the
images list, and pull secrets for the platform's own namespaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from config.spec.images import stack_images
from offline.render import write_render
from tests.conftest import load, mutate, paths_of, stack_raw

SEED = stack_raw("aicloud-a")
DEV = stack_raw("dev")
MIRROR = "10.8.17.100:60066"


def test_the_example_cluster_pulls_everything_from_its_mirror(committed_render: Any, tmp_path: Path) -> None:
    result = committed_render("aicloud-a")
    write_render(result, tmp_path)
    images = (tmp_path / "images.txt").read_text().splitlines()
    assert images == sorted(set(images))
    assert images == [
        f"{MIRROR}/lws/lws:v0.10.0",
        f"{MIRROR}/mars/vllm-mars:0.11.0-hpcc.ai3.3.0.12-torch2.6-py312-ubuntu22.04-amd64-20251224",
        f"{MIRROR}/volcanosh/vc-controller-manager:v1.15.1",
        f"{MIRROR}/volcanosh/vc-scheduler:v1.15.1",
        f"{MIRROR}/volcanosh/vc-webhook-manager:v1.15.1",
    ]
    assert "[images.txt](images.txt)" in (tmp_path / "summary.md").read_text()
    charts = {r.data["release"]: r.data["chart"] for r in result.rendered.releases}
    assert charts == {"volcano": f"oci://{MIRROR}/charts/volcano", "lws": f"oci://{MIRROR}/charts/lws"}


def test_images_list_every_container_image_the_render_pulls(committed_render: Any) -> None:
    """What images.txt lists for the models is exactly what the pod templates name."""
    for stack in ("dev", "aicloud-a"):
        result = committed_render(stack)
        templates = [o.manifest["spec"]["template"] for o in result.rendered.by_kind("Deployment")]
        for lws in result.rendered.by_kind("LeaderWorkerSet"):
            group = lws.manifest["spec"]["leaderWorkerTemplate"]
            templates += [group["leaderTemplate"], group["workerTemplate"]]
        pulled = {c["image"] for t in templates for c in t["spec"]["containers"]}
        listed = set(stack_images(result.spec))
        assert pulled and pulled <= listed
        assert len(listed - pulled) == (4 if stack == "aicloud-a" else 3)  # Volcano's three, LWS's one


def test_pull_secrets_are_created_in_the_platforms_own_namespaces(committed_render: Any) -> None:
    rendered = committed_render("aicloud-a").rendered
    for namespace in ("volcano-system", "lws-system"):
        secret = rendered.find("Secret", "mars-registry", namespace).manifest
        assert secret["type"] == "kubernetes.io/dockerconfigjson"
        assert secret["stringData"] == {".dockerconfigjson": "[secret]"}
    values = {r.data["release"]: r.data["values"] for r in rendered.releases}
    assert values["volcano"]["basic"]["image_pull_secret"] == "mars-registry"
    assert values["lws"]["imagePullSecrets"] == [{"name": "mars-registry"}]
    index = {e["urn"].split("::")[-1]: e for e in rendered.index}
    assert any(d.endswith("::volcano-pull-secret") for d in index["volcano-release"]["dependsOn"])
    assert any(d.endswith("::lws-pull-secret") for d in index["lws-release"]["dependsOn"])


def test_an_https_helm_repository_mirror(render_raw: Any) -> None:
    raw = mutate(SEED, lambda r: r["cluster"]["mirror"].update(charts="https://charts.internal/helm"))
    releases = {r.data["release"]: r.data for r in render_raw(raw).rendered.releases}
    assert (releases["volcano"]["chart"], releases["volcano"]["repository"]) == (
        "volcano",
        "https://charts.internal/helm",
    )
    assert (releases["lws"]["chart"], releases["lws"]["repository"]) == ("lws", "https://charts.internal/helm")


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r["cluster"]["mirror"].update(registry="https://10.8.17.100:60066"), "cluster.mirror.registry"),
        (lambda r: r["cluster"]["mirror"].update(charts="10.8.17.100:60066/charts"), "cluster.mirror.charts"),
        (lambda r: r["cluster"]["mirror"].update(pullSecret="harbor"), "cluster.mirror.pullSecret"),
        (lambda r: r["volcano"].update(repository="ftp://charts"), "volcano.repository"),
        (lambda r: r["volcano"].update(imageRegistry="http://10.8.17.100"), "volcano.imageRegistry"),
        (
            lambda r: r["registries"]["mars-registry"].update(server="https://10.8.17.100:60066"),
            "registries.mars-registry.server",
        ),
        (lambda r: r["registries"]["mars-registry"].update(server=""), "registries.mars-registry.server"),
        (
            lambda r: r["models"]["qwen8b-preemptor"].update(image="https://10.8.17.100:60066/mars/vllm:1"),
            "models.qwen8b-preemptor.image",
        ),
        (
            lambda r: r["models"]["qwen8b-preemptor"].update(image="10.8.17.100:60066/Mars/vllm:1"),
            "models.qwen8b-preemptor.image",
        ),
        (lambda r: r.update(lws={"chart": "lws"}) or r["cluster"]["mirror"].pop("charts"), "lws.chart"),
    ],
)
def test_malformed_sources_are_config_errors(change: Any, path: str) -> None:
    assert path in paths_of(mutate(SEED, change))


def test_images_that_bypass_the_mirror_are_warned_about() -> None:
    raw = mutate(SEED, lambda r: r["models"]["qwen8b-preemptor"].update(image="vllm/vllm-openai:v0.11.0"))
    (warning,) = [w for w in load(raw).warnings if w.path == "models.qwen8b-preemptor.image"]
    assert f"not pulled from the mirror `{MIRROR}`" in warning.message


def test_volcano_runs_the_patched_images_of_its_chart() -> None:
    from components.scheduling.volcano_values import volcano_values

    assert volcano_values(load(DEV))["basic"]["image_tag_version"] == "v1.15.1"
    pinned = mutate(DEV, lambda r: r.update(volcano={"imageTag": "v1.15.0"}))
    spec = load(pinned)
    assert volcano_values(spec)["basic"]["image_tag_version"] == "v1.15.0"
    (warning,) = [w for w in spec.warnings if w.path == "volcano.imageTag"]
    assert "v1.15.0 have a known scheduling bug" in warning.message and "e945225f3" in warning.message


def test_the_vendored_chart_runs_the_images_the_program_names() -> None:
    """The image names and default tag the program lists are the chart's own."""
    from config.upstream.volcano import VOLCANO_ADMISSION_IMAGE, VOLCANO_CONTROLLER_IMAGE, VOLCANO_SCHEDULER_IMAGE
    from offline.check import upstream_values

    values = upstream_values("volcano", "1.15.0")
    assert values is not None
    basic = values["basic"]
    assert (basic["scheduler_image_name"], basic["controller_image_name"], basic["admission_image_name"]) == (
        VOLCANO_SCHEDULER_IMAGE,
        VOLCANO_CONTROLLER_IMAGE,
        VOLCANO_ADMISSION_IMAGE,
    )
    assert basic["image_tag_version"] == "v1.15.0" and basic["image_registry"] == "docker.io"
    lws = upstream_values("lws", "0.10.0")
    assert lws is not None and lws["image"]["manager"]["repository"] == "registry.k8s.io/lws/lws"
