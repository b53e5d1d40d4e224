"""Where every image and chart the stack pulls comes from.

`cluster.mirror` is the default source of the platform's own images and charts (an air-gapped
network mirrors them); per-component keys override it. Resolved here once, so the Helm values,
the list of images a render writes and the checks all agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from config.upstream.inference_gateway import (
    ROUTER_IMAGE_PATH,
    ROUTER_IMAGE_REPOSITORY,
    ROUTER_VERSION,
    SIDECAR_IMAGE_PATH,
    SIDECAR_IMAGE_REPOSITORY,
)
from config.upstream.interconnects import NETWORK_PROFILES
from config.upstream.lws import LWS_CHART, LWS_IMAGE_PATH, LWS_IMAGE_REPOSITORY
from config.upstream.vendored import normalize_version
from config.upstream.volcano import (
    VOLCANO_ADMISSION_IMAGE,
    VOLCANO_CHART,
    VOLCANO_CHART_REGISTRY,
    VOLCANO_CONTROLLER_IMAGE,
    VOLCANO_PATCHED_IMAGE_TAGS,
    VOLCANO_REPOSITORY,
    VOLCANO_SCHEDULER_IMAGE,
)

if TYPE_CHECKING:
    from config.sections.models import ModelConfig
    from config.sections.pools import PoolNetwork
    from config.sections.stack import StackConfig
    from config.spec.platform import PlatformSpec


@dataclass(frozen=True)
class ChartSource:
    """What `helm.v3.Release` is given: `chart`, and `repositoryOpts.repo` for a classic Helm
    repository (None for OCI references, which carry their registry in `chart`); the entry of
    `registries` whose credentials pull it, and a CA bundle."""

    chart: str
    repository: str | None
    credentials: str | None = None
    ca_file: str | None = None


def reference_host(reference: str) -> str:
    return reference.split("://", 1)[-1].split("/", 1)[0]


def _with_login(config: StackConfig, source: ChartSource, own: str | None, own_ca: str | None) -> ChartSource:
    """The credentials and CA bundle a chart is pulled with: its install's own, the mirror's for a
    chart on the mirror's host, else the `registries` entry for the chart's host."""
    mirror = config.cluster.mirror
    host = reference_host(source.repository or source.chart)
    on_mirror = mirror.charts is not None and reference_host(mirror.charts) == host
    by_host = next((name for name, r in config.registries.items() if r.server == host), None)
    credentials = own or (mirror.chart_credentials if on_mirror else None) or by_host
    ca_file = own_ca or (mirror.chart_ca_file if on_mirror else None)
    return dataclasses.replace(source, credentials=credentials, ca_file=ca_file)


def chart_source(repository: str, name: str) -> ChartSource:
    if repository.startswith("oci://"):
        return ChartSource(f"{repository.rstrip('/')}/{name}", None)
    return ChartSource(name, repository)


def volcano_chart(config: StackConfig) -> ChartSource:
    source = chart_source(
        config.volcano.repository or config.cluster.mirror.charts or VOLCANO_REPOSITORY, VOLCANO_CHART
    )
    return _with_login(config, source, config.volcano.chart_credentials, config.volcano.chart_ca_file)


def lws_chart(config: StackConfig) -> ChartSource:
    return _with_login(config, _lws_source(config), config.lws.chart_credentials, config.lws.chart_ca_file)


def is_chart_name(chart: str) -> bool:
    """A chart's name in a Helm repository, as opposed to a URL, an OCI reference, an archive or a
    chart folder on the machine that runs `pulumi up` (`./charts/lws`, `/srv/charts/lws`)."""
    return "://" not in chart and not chart.endswith(".tgz") and not chart.startswith(("/", "."))


def _lws_source(config: StackConfig) -> ChartSource:
    charts = config.cluster.mirror.charts
    chart = config.lws.chart
    if chart is None:
        return chart_source(charts, "lws") if charts else ChartSource(LWS_CHART, None)
    if not is_chart_name(chart) or charts is None or charts.startswith("oci://"):
        return ChartSource(chart, None)
    return ChartSource(chart, charts)  # a chart name in the mirror's Helm repository


def volcano_image_registry(config: StackConfig) -> str:
    return config.volcano.image_registry or config.cluster.mirror.registry or VOLCANO_CHART_REGISTRY


def volcano_image_tag(config: StackConfig) -> str:
    """The tag every Volcano component runs: the stack's, else the patch release that fixes the
    chart's images, else the chart's own (`v<chart version>`)."""
    version = normalize_version(config.volcano.version)
    return config.volcano.image_tag or VOLCANO_PATCHED_IMAGE_TAGS.get(version) or f"v{version}"


def volcano_images(config: StackConfig) -> list[str]:
    names = [VOLCANO_SCHEDULER_IMAGE, VOLCANO_CONTROLLER_IMAGE]
    if config.volcano.admission:
        names.append(VOLCANO_ADMISSION_IMAGE)
    registry, tag = volcano_image_registry(config), volcano_image_tag(config)
    return [f"{registry}/{name}:{tag}" for name in names]


def lws_image_repository(config: StackConfig) -> str | None:
    """The LWS controller repository when it differs from the chart's, else None."""
    if config.lws.image_repository:
        return config.lws.image_repository
    if config.cluster.mirror.registry:
        return f"{config.cluster.mirror.registry}/{LWS_IMAGE_PATH}"
    return None


def lws_image(config: StackConfig) -> str:
    repository = lws_image_repository(config) or LWS_IMAGE_REPOSITORY
    return f"{repository}:v{normalize_version(config.lws.version)}"


def router_image(config: StackConfig) -> str:
    """The gateway's endpoint picker: the stack's image, else the pinned release, under the mirror
    when there is one."""
    if config.gateway is not None and config.gateway.router.image is not None:
        return config.gateway.router.image
    mirror = config.cluster.mirror.registry
    repository = f"{mirror}/{ROUTER_IMAGE_PATH}" if mirror else ROUTER_IMAGE_REPOSITORY
    return f"{repository}:v{ROUTER_VERSION}"


def router_pull_secret(config: StackConfig) -> str | None:
    """The mirror's login, for a router image on the mirror's registry."""
    mirror = config.cluster.mirror
    if mirror.registry is None or mirror.pull_secret is None:
        return None
    on_mirror = reference_host(router_image(config)) == reference_host(mirror.registry)
    return mirror.pull_secret if on_mirror else None


def sidecar_image(config: StackConfig, model: ModelConfig) -> str:
    """The routing sidecar beside a decode vLLM: the model's image for it, else the release of the
    pinned router, under the mirror when there is one."""
    if model.disaggregation is not None and model.disaggregation.sidecar.image is not None:
        return model.disaggregation.sidecar.image
    mirror = config.cluster.mirror.registry
    repository = f"{mirror}/{SIDECAR_IMAGE_PATH}" if mirror else SIDECAR_IMAGE_REPOSITORY
    return f"{repository}:v{ROUTER_VERSION}"


def network_daemon_image(config: StackConfig, network: PoolNetwork | None) -> str | None:
    """The daemon of a pool's network profile: the pool's image for it, else the release the
    platform is built against, under the mirror when there is one."""
    profile = NETWORK_PROFILES[network.profile] if network is not None else None
    if network is None or profile is None or profile.daemon is None:
        return None
    if network.daemon_image is not None:
        return network.daemon_image
    mirror = config.cluster.mirror.registry
    return f"{mirror}/{profile.daemon_image_path}" if mirror else profile.daemon_image


def sidecar_pull_secret(config: StackConfig, model: ModelConfig) -> str | None:
    """The mirror's login, for a sidecar image on the mirror's registry."""
    mirror = config.cluster.mirror
    if mirror.registry is None or mirror.pull_secret is None:
        return None
    on_mirror = reference_host(sidecar_image(config, model)) == reference_host(mirror.registry)
    return mirror.pull_secret if on_mirror else None


def volcano_pull_secret(config: StackConfig) -> str | None:
    return config.volcano.image_pull_secret or config.cluster.mirror.pull_secret


def lws_pull_secret(config: StackConfig) -> str | None:
    return config.lws.image_pull_secret or config.cluster.mirror.pull_secret


def stack_images(spec: PlatformSpec) -> list[str]:
    """Every container image the stack pulls: the Volcano components, the LWS controller when
    installed, and the models' images; sorted, each once."""
    images = set(volcano_images(spec.config))
    if spec.lws_install:
        images.add(lws_image(spec.config))
    images.update(model.config.image for model in spec.models.values())
    images.update(sidecar_image(spec.config, m.config) for m in spec.models.values() if m.disaggregated)
    if spec.gateway is not None:
        images.add(router_image(spec.config))
    return sorted(images)
