"""Checks of the Volcano and LeaderWorkerSet installs: component resources the API server would
refuse, chart-value escape hatches that would silently replace what the program generates, the
images the charts run and the vendored upstream versions. Where the charts come from and how
Helm keeps them: `config.checks.charts`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from config.errors import Problem, join_path
from config.schema.names import image_reference_problem
from config.schema.quantity import quantity_value
from config.spec.images import lws_image, volcano_image_tag, volcano_images
from config.spec.platform import PlatformSpec
from config.upstream.vendored import LWS, VOLCANO, fetch_command, vendored_dir, vendored_versions
from config.upstream.volcano import VOLCANO_IMAGE_BUGS

# Chart values the program writes from typed settings (`components/volcano_values.py`,
# `components/lws.py`); a test keeps these lists equal to what they generate. An override in
# `values` would make the summary, the checks and the cluster disagree.
GENERATED_VOLCANO_VALUES: dict[str, dict[str, str]] = {
    "basic": {
        "image_registry": "volcano.imageRegistry (or cluster.mirror.registry)",
        "image_tag_version": "volcano.imageTag",
        "image_pull_secret": "volcano.imagePullSecret (or cluster.mirror.pullSecret)",
    },
    "custom": {
        "scheduler_config_override": "volcano.scheduler",
        "controller_config_override": "topology (hyperNodes, discovery)",
        "scheduler_replicas": "volcano.replicas.scheduler",
        "controller_replicas": "volcano.replicas.controller",
        "admission_replicas": "volcano.replicas.admission",
        "leader_elect_enable": "volcano.replicas (on with more than one replica)",
        "admission_enable": "volcano.admission",
        "scheduler_resources": "volcano.resources.scheduler",
        "controller_resources": "volcano.resources.controller",
        "admission_resources": "volcano.resources.admission",
        "default_ns": "volcano.nodeSelector",
        "default_tolerations": "volcano.tolerations",
        "scheduler_metrics_enable": "observability.volcano",
        "controller_metrics_enable": "observability.volcano",
    },
}
GENERATED_LWS_VALUES: dict[str, str] = {
    "replicaCount": "lws.replicas",
    "gangSchedulingManagement": "lws.gangScheduling",
    "image": "lws.imageRepository (or cluster.mirror.registry)",
    "imagePullSecrets": "lws.imagePullSecret (or cluster.mirror.pullSecret)",
}


def check_installs(spec: PlatformSpec) -> list[Problem]:
    return [*_component_resources(spec), *_value_overrides(spec)]


def _component_resources(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for component in ("scheduler", "controller", "admission"):
        requirements = getattr(spec.config.volcano.resources, component)
        if requirements is None:
            continue
        for resource, limit in requirements.limits.items():
            request = requirements.requests.get(resource)
            if request is not None and quantity_value(limit) < quantity_value(request):
                problems.append(
                    Problem(
                        join_path("volcano", "resources", component, "limits", resource),
                        f"the limit {limit} is below the request {request}; the API server rejects the pod",
                        "raise the limit to at least the request",
                        got=limit,
                    )
                )
    return problems


def _value_overrides(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    volcano_values: Mapping[str, Any] = spec.config.volcano.values
    for section, keys in GENERATED_VOLCANO_VALUES.items():
        given = volcano_values.get(section)
        if not isinstance(given, Mapping):
            continue
        for key in given:
            if key in keys:
                problems.append(_override(join_path("volcano", "values", section, key), keys[key]))
    for key in spec.config.lws.values:
        if key in GENERATED_LWS_VALUES:
            problems.append(_override(join_path("lws", "values", key), GENERATED_LWS_VALUES[key]))
    return problems


def _override(path: str, typed: str) -> Problem:
    return Problem(
        path,
        "the program writes this chart value from typed settings; overriding it here would make the summary and "
        "the checks describe something other than what runs",
        f"set `{typed}` instead",
    )


# The distribution reference grammar (github.com/distribution/reference, reference.go and regexp.go):
# a tag is `[\w][\w.-]{0,127}`, and a name (registry and path) is at most 255 characters
# (`NameTotalLengthMax`).
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
NAME_TOTAL_LENGTH_MAX = 255


def _repository_problem(value: str) -> str | None:
    """Why `value` is not an image repository (a reference without tag or digest)."""
    if "://" in value:
        return "has a URL scheme; a repository starts with the registry host"
    if "@" in value:
        return "has a digest; the repository is given alone"
    if ":" in value.rsplit("/", 1)[-1]:
        return "has a tag; the repository is given alone"
    return image_reference_problem(value)


def _image_parts(spec: PlatformSpec) -> list[Problem]:
    """Every image the stack renders is valid, whichever keys it is built from: an invalid one fails to
    pull, and the LWS and Volcano webhooks fail closed, so every LeaderWorkerSet (or every Queue and
    PodGroup) is then refused."""
    config = spec.config
    problems: list[Problem] = []
    repository = config.lws.image_repository
    if repository is not None and (why := _repository_problem(repository)):
        problems.append(
            Problem(
                "lws.imageRepository",
                f"`{repository}` {why}: the chart appends `:<tag>` itself, so the LWS controller would get an invalid "
                "image, and its webhook, which fails closed, would refuse every LeaderWorkerSet",
                "write the repository alone in lower case, e.g. `harbor.example.com/mirror/lws/lws` (the tag follows "
                "`lws.version`)",
                got=repository,
            )
        )
    tag = config.volcano.image_tag
    if tag is not None and not _TAG.match(tag):
        problems.append(
            Problem(
                "volcano.imageTag",
                "not an image tag (letters, digits, `_`, `.` and `-`, at most 128, not starting with `.` or `-`): "
                "the Volcano images could not be pulled, and the admission webhook, which fails closed, would refuse "
                "every Queue and PodGroup",
                "write the tag alone, e.g. `v1.15.1` (the registry goes in `volcano.imageRegistry`)",
                got=tag,
            )
        )
    if problems:
        return problems
    rendered = [
        ("volcano.imageRegistry" if config.volcano.image_registry else "cluster.mirror.registry", image)
        for image in volcano_images(config)
    ]
    if spec.lws_install:
        rendered.append(("lws.imageRepository" if repository else "cluster.mirror.registry", lws_image(config)))
    for path, image in rendered:
        name = image.split("@", 1)[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
        why = image_reference_problem(image)
        if why is None and len(name) > NAME_TOTAL_LENGTH_MAX:
            why = f"is named with {len(name)} characters, more than the {NAME_TOTAL_LENGTH_MAX} a reference may have"
        if why is not None:
            problems.append(
                Problem(
                    path,
                    f"the rendered image `{image}` {why}, so it cannot be pulled",
                    "shorten or correct the registry path",
                    got=image,
                )
            )
            break
    return problems


def check_images(spec: PlatformSpec) -> list[Problem]:
    config = spec.config
    problems: list[Problem] = _image_parts(spec)
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
    return problems


def _unvendored(project: str, label: str, path: str, version: str) -> Problem:
    have = ", ".join(vendored_versions(project)) or "none"
    return Problem(
        path,
        f"no {label} schemas of chart version {version} are vendored in upstream/ (vendored: {have}), "
        "so its objects cannot be checked",
        f"use a vendored version, or vendor this one with `{fetch_command(project, version)}` (needs network; "
        "review and commit upstream/)",
        got=version,
    )


def check_upstream_versions(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    volcano = spec.config.volcano.version
    if vendored_dir(VOLCANO, volcano) is None:
        problems.append(_unvendored(VOLCANO, "Volcano", "volcano.version", volcano))
    lws = spec.config.lws.version
    uses_lws = spec.lws_install or any(m.config.uses_lws for m in spec.models.values())
    if uses_lws and vendored_dir(LWS, lws) is None:
        problems.append(_unvendored(LWS, "LeaderWorkerSet", "lws.version", lws))
    return problems
