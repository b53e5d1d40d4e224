"""Checks of where images and charts come from: pull secrets that exist, images with known bugs,
and images that bypass a configured mirror."""

from __future__ import annotations

from config.errors import Problem, join_path
from config.images import volcano_image_tag
from config.spec import PlatformSpec
from config.upstream import VOLCANO_IMAGE_BUGS


def check_images(spec: PlatformSpec) -> list[Problem]:
    config = spec.config
    problems: list[Problem] = []
    for path, registry in (
        ("volcano.imagePullSecret", config.volcano.image_pull_secret),
        ("lws.imagePullSecret", config.lws.image_pull_secret),
        ("cluster.mirror.pullSecret", config.cluster.mirror.pull_secret),
    ):
        if registry is not None and registry not in config.registries:
            problems.append(
                Problem(
                    path,
                    f"registry `{registry}` is not defined",
                    "add it under `registries` (server, username, passwordSecret); the program creates its Secret",
                    got=registry,
                )
            )
    tag = volcano_image_tag(config)
    if tag in VOLCANO_IMAGE_BUGS:
        problems.append(
            Problem(
                "volcano.imageTag" if config.volcano.image_tag else "volcano.version",
                f"Volcano images {tag} have a known scheduling bug: {VOLCANO_IMAGE_BUGS[tag]}",
                "remove `imageTag` (the program then runs the fixed images), or pin a fixed tag",
                got=tag,
                severity="warning",
            )
        )
    mirror = config.cluster.mirror.registry
    if mirror:
        for model in spec.models.values():
            if not model.config.image.startswith(f"{mirror}/"):
                problems.append(
                    Problem(
                        join_path("models", model.name, "image"),
                        f"the image is not pulled from the mirror `{mirror}`; where only the mirror is reachable, "
                        "its pods cannot start",
                        f"mirror it and write `{mirror}/<path>:<tag>`",
                        got=model.config.image,
                        severity="warning",
                    )
                )
    chart = config.lws.chart
    charts = config.cluster.mirror.charts
    if chart is not None and "://" not in chart and not chart.endswith(".tgz") and not charts:
        problems.append(
            Problem(
                "lws.chart",
                f"`{chart}` is a chart name, but no Helm repository is configured to find it in",
                "write an `oci://<host>/<path>/lws` reference, or set `cluster.mirror.charts`",
                got=chart,
            )
        )
    return problems
