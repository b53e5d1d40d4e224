"""Checks of the charts the stack installs: where they come from (a reference Helm can fetch, a
CA file as Helm reads it), settings no installed chart reads, releases to adopt, and where Helm
keeps its release records (what the preview identity must then read)."""

from __future__ import annotations

from pydantic.alias_generators import to_camel

from config.errors import Problem, join_path
from config.spec.images import is_chart_name, lws_chart, reference_host, volcano_chart
from config.spec.platform import PlatformSpec


def check_charts(spec: PlatformSpec) -> list[Problem]:
    return [
        *_adoption(spec),
        *_chart_settings_unused(spec),
        *_lws_chart_settings_unused(spec),
        *_release_records(spec),
        *_lws_chart_name(spec),
        *_dead_mirror_settings(spec),
    ]


def _lws_chart_name(spec: PlatformSpec) -> list[Problem]:
    """A bare chart name is looked up in a classic Helm repository; with none (or an OCI registry,
    where a chart is its full reference) Helm would take it for a local folder and fail at `up`."""
    chart, charts = spec.config.lws.chart, spec.config.cluster.mirror.charts
    if not spec.lws_install or chart is None or not is_chart_name(chart):
        return []
    if charts is not None and not charts.startswith("oci://"):
        return []
    where = "`cluster.mirror.charts` is unset" if charts is None else f"the mirror `{charts}` is an OCI registry"
    return [
        Problem(
            "lws.chart",
            f"`{chart}` is a chart name, but {where}, so there is no Helm repository to look it up in",
            f"write the full reference, `{(charts or 'oci://<registry>/<path>').rstrip('/')}/{chart}`",
            got=chart,
        )
    ]


# LWS chart settings, silently unused when the stack installs no LWS.
LWS_CHART_SETTINGS = (
    "chart",
    "protect",
    "replicas",
    "image_repository",
    "image_pull_secret",
    "values",
    "chart_credentials",
    "chart_ca_file",
)


def _lws_not_installed(spec: PlatformSpec) -> str:
    """Why the stack installs no LWS, for the messages about its settings."""
    explicit = spec.config.lws.install is False
    return "`lws.install` is false" if explicit else "no model spans several nodes (`lws.install` unset)"


def _lws_chart_settings_unused(spec: PlatformSpec) -> list[Problem]:
    """LWS's chart settings while the stack installs no LWS: an error where the stack says so
    (`lws.install: false`), a warning where the default decides."""
    lws = spec.config.lws
    if spec.lws_install:
        return []
    return [
        Problem(
            join_path("lws", to_camel(name)),
            f"sets LWS's chart, but the stack installs no LWS ({_lws_not_installed(spec)}), so this setting "
            "changes nothing",
            "remove it, or set `lws.install: true`",
            got=getattr(lws, name),
            severity="error" if lws.install is False else "warning",
        )
        for name in LWS_CHART_SETTINGS
        if name in lws.model_fields_set
    ]


def _dead_mirror_settings(spec: PlatformSpec) -> list[Problem]:
    """The mirror's chart settings that no installed chart reads: an error without
    `cluster.mirror.charts`, a warning where no installed chart comes from it."""
    mirror = spec.config.cluster.mirror
    if mirror.charts is None:
        return [
            Problem(
                join_path("cluster", "mirror", to_camel(name)),
                "the mirror's chart login is for charts from the mirror, but `cluster.mirror.charts` is unset, so no "
                "chart uses it",
                "set `cluster.mirror.charts`, or remove it (a chart's own `chartCredentials`/`chartCaFile` set "
                "its login)",
                got=getattr(mirror, name),
            )
            for name in ("chart_credentials", "chart_ca_file")
            if name in mirror.model_fields_set
        ]
    host = reference_host(mirror.charts)
    sources = [(volcano_chart(spec.config), spec.config.volcano.install), (lws_chart(spec.config), spec.lws_install)]
    if any(installed and reference_host(s.repository or s.chart) == host for s, installed in sources):
        return []
    return [
        Problem(
            "cluster.mirror.charts",
            "no chart the stack installs comes from the mirror (`volcano.repository` and `lws.chart` name "
            "other sources, or neither is installed), so it and its chart settings change nothing",
            "remove the per-chart sources to pull both charts from the mirror, or remove `charts`",
            got=mirror.charts,
            severity="warning",
        )
    ]


def _release_records(spec: PlatformSpec) -> list[Problem]:
    """Helm's default storage puts a chart's release records among the Secrets of its namespace,
    and reading them is a LIST of every Secret there (helm `pkg/storage/driver/secrets.go`, Query),
    so the preview identity would read the admission webhook's TLS key and the pull secret."""
    charts = [
        name for name, installed in (("Volcano", spec.config.volcano.install), ("LWS", spec.lws_install)) if installed
    ]
    storage = spec.config.cluster.helm_release_storage
    adopted = [
        f"{key}.adopt"
        for key, install, adopt in (
            ("volcano", spec.config.volcano.install, spec.config.volcano.adopt),
            ("lws", spec.lws_install, spec.config.lws.adopt),
        )
        if install and adopt
    ]
    if storage == "configmap":
        return [
            Problem(
                path,
                "adopts a release installed by hand, whose records Helm keeps in Secrets unless it ran with "
                "`HELM_DRIVER=configmap`, while `cluster.helmReleaseStorage` is `configmap`: the provider looks for "
                "the release among ConfigMaps and the adoption fails, finding none",
                'move the release\'s records to ConfigMaps first (docs/operations.md, "Helm release records"), '
                "then adopt",
                got=True,
                severity="warning",
            )
            for path in adopted
        ]
    if not charts or storage is not None:
        return []
    return [
        Problem(
            "cluster.helmReleaseStorage",
            f"Helm keeps the release records of {' and '.join(charts)} among the Secrets of their namespaces, so the "
            "preview identity (`volcano-platform preview-role`) must list every Secret there, the admission webhook's "
            "TLS key and the image pull secret included",
            "set `cluster.helmReleaseStorage: configmap` (on an installed cluster, move the records first: "
            'docs/operations.md, "Helm release records"), or `secret` to keep them where they are',
            severity="warning",
        )
    ]


# Settings of Volcano's chart; with `volcano.install: false` the program installs no chart, so
# each would be silently ignored.
VOLCANO_CHART_SETTINGS = (
    "repository",
    "protect",
    "adopt",
    "image_registry",
    "image_tag",
    "image_pull_secret",
    "replicas",
    "resources",
    "node_selector",
    "tolerations",
    "admission",
    "values",
    "chart_credentials",
    "chart_ca_file",
)


def _chart_settings_unused(spec: PlatformSpec) -> list[Problem]:
    volcano = spec.config.volcano
    if volcano.install:
        return []
    return [
        Problem(
            join_path("volcano", to_camel(name)),
            "sets Volcano's chart, but `volcano.install` is false: the program installs no chart and owns only the "
            "scheduler policy, so this setting would change nothing",
            "remove it (set it where Volcano is installed), or set `volcano.install: true`",
            got=getattr(volcano, name),
        )
        for name in VOLCANO_CHART_SETTINGS
        if name in volcano.model_fields_set
    ]


def _adoption(spec: PlatformSpec) -> list[Problem]:
    if not spec.config.lws.adopt or spec.lws_install:
        return []
    return [
        Problem(
            "lws.adopt",
            f"`adopt` takes over the LWS release, but the stack does not install LWS ({_lws_not_installed(spec)}), "
            "so nothing adopts it "
            "and the hand-made release stays unmanaged",
            "remove `adopt`, or set `lws.install: true` to take the release over",
            got=True,
        )
    ]
