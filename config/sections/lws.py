"""`lws`: the LeaderWorkerSet controller that runs multi-node models."""

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from config.schema.base import invalid
from config.sections.volcano import ChartAccess, ChartVersion
from config.upstream.lws import LWS_DEFAULT_VERSION


def _chart_reference(value: str) -> str:
    """A chart reference Helm fetches over TLS: `oci://`, `https://`, or a name in the mirror's
    repository (checked against `cluster.mirror.charts`); plain HTTP would carry the chart, and the
    credentials Helm sends with it, in clear text."""
    scheme = value.split("://", 1)[0] if "://" in value else None
    if scheme not in (None, "oci", "https"):
        raise invalid(
            f"chart `{value}` is fetched over `{scheme}://`"
            + (", in clear text with any credentials sent along" if scheme == "http" else ", which Helm cannot"),
            "use an `oci://` or `https://` reference (the provider's Release has no plain-HTTP switch)",
        )
    if not value.strip() or not value.isprintable() or value.startswith("~"):
        raise invalid(f"chart `{value}` is not a chart reference", "write `oci://<host>/<path>/lws`")
    return value


ChartReference = Annotated[str, AfterValidator(_chart_reference)]


class LwsConfig(ChartAccess):
    """`lws`: chart and gang-scheduling mode of the LeaderWorkerSet controller."""

    install: bool | None = None
    """Install the LWS chart. Default: when any model spans several nodes. `false` when LWS is
    managed elsewhere (its CRD must then exist before `pulumi up`)."""
    chart: ChartReference | None = None
    """Chart reference: `oci://<host>/<path>/lws`, an `https://` URL of the chart's archive, or the
    chart's name in an `https://` Helm repository given by `cluster.mirror.charts`. Default:
    `<cluster.mirror.charts>/lws`, else `oci://registry.k8s.io/lws/charts/lws`."""
    version: ChartVersion = LWS_DEFAULT_VERSION
    """LWS chart version (quote it)."""
    protect: bool = False
    """Protect the release from deletion (its CRD would take every LeaderWorkerSet with it)."""
    adopt: bool = False
    """LWS was installed by hand as release `lws` in `lws-system`: take over that release and its
    namespace. `pulumi up` imports the release and upgrades it in place to this stack's chart
    version and values (`helm/lws.yaml`). Refused when the stack does not install LWS."""
    replicas: Annotated[int, Field(ge=1, le=5)] = 1
    """Controller replicas."""
    image_repository: str | None = None
    """Controller image repository (a mirror of `registry.k8s.io/lws/lws`), without tag, digest
    or scheme and in lower case (refused otherwise: the chart appends the tag, and LWS's webhook
    fails closed). Default: `<cluster.mirror.registry>/lws/lws`, else the chart's."""
    image_pull_secret: str | None = None
    """Entry of `registries` to pull the controller image with; the program creates the Secret
    in `lws-system`. Its `server` must be the image's registry. Default: `cluster.mirror.pullSecret`."""
    gang_scheduling: bool = False
    """Let LWS create one Volcano PodGroup per group itself. Those PodGroups carry no network
    topology and no priority class, so it is only allowed when no model asks for a topology
    constraint; by default the platform makes the topology-aware PodGroups."""
    values: dict[str, Any] = {}
    """Extra chart values, merged over the generated ones (escape hatch)."""
