"""`observability`: metrics, alerts and a dashboard for the models and the scheduler.

Built for one of two collectors the stack does not install. prometheus-operator as
kube-prometheus-stack installs it: the operator selects monitors and rules by the label
`release: <its release>`. Or Google Cloud Managed Service for Prometheus, GKE's default: its
managed collection scrapes every `PodMonitoring` and evaluates every `ClusterRules`, with no label
to select them. Grafana's sidecar loads dashboards from ConfigMaps labelled `grafana_dashboard: "1"`
with either. Each is a setting, for installs that differ.
"""

import re
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from config.schema.base import ConfigModel, cli_float, invalid
from config.schema.names import DnsLabel, HttpUrl, LabelKey, LabelValue, PrometheusLabelName, PrometheusLabelValue

KPS_RELEASE = "kube-prometheus-stack"
GOOGLE_MANAGED = "google-managed"
# The query frontend of Managed Service for Prometheus as Google's guide deploys it
# (prometheus-engine v0.17.2 `examples/frontend.yaml`): Service `frontend`, port 9090, a
# Prometheus HTTP API over the project's data, for Grafana and KEDA.
GMP_FRONTEND = "frontend"
GMP_FRONTEND_PORT = 9090
# Helm's release names (helm/helm v3 pkg/chartutil/validate_name.go, `ValidateReleaseName`): a
# DNS-1123 subdomain of at most 53 characters (`releaseNameMaxLen`).
_HELM_RELEASE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class AlertsConfig(ConfigModel):
    """One PrometheusRule with the alerts a platform team pages on. Durations are minutes a
    condition must hold before the alert fires."""

    enabled: bool = True
    """Render the PrometheusRule. Any other alert setting with `enabled: false` or with
    `observability.enabled` off is refused: it would change nothing. A duration shorter than two
    scrape intervals (`observability.scrapeIntervalSeconds`) is warned about: the alert then fires
    on one missed scrape."""
    no_ready_replica_minutes: Annotated[int, Field(ge=1, le=1440)] = 5
    """A model that should run has no ready replica."""
    metrics_down_minutes: Annotated[int, Field(ge=1, le=1440)] = 5
    """A model's metrics endpoint cannot be scraped."""
    requests_waiting: Annotated[int, Field(ge=1, le=1_000_000)] = 10
    """Requests queued in a model's servers (summed over its replicas)..."""
    requests_waiting_minutes: Annotated[int, Field(ge=1, le=1440)] = 5
    """... for this long."""
    kv_cache_usage: cli_float(gt=0, le=1) = 0.95  # type: ignore[valid-type]
    """KV-cache usage (0..1) of one server at which requests start to be preempted..."""
    kv_cache_minutes: Annotated[int, Field(ge=1, le=1440)] = 10
    """... for this long."""
    pod_group_pending_minutes: Annotated[int, Field(ge=1, le=1440)] = 15
    """A PodGroup (gang) cannot be scheduled, or waits in its queue."""
    queue_full_minutes: Annotated[int, Field(ge=1, le=1440)] = 15
    """A tenant queue's accelerator allocation is at its capability."""
    scheduler_down_minutes: Annotated[int, Field(ge=1, le=1440)] = 5
    """The Volcano scheduler or controller is not scraped as up."""
    labels: dict[PrometheusLabelName, PrometheusLabelValue] = {}
    """Extra labels on every alert (e.g. `team: gpu-platform` for routing): Prometheus label names
    (letters, digits, `_`; a Kubernetes key such as `example.com/team` is not one) and any one-line
    value (`GPU platform`). `severity` (and
    `alertname`, `load_budget`) are set by each alert and warned about here: Alertmanager routes
    pages on `severity`, and one value for every alert would stop critical alerts paging."""
    runbook_url: HttpUrl | None = None
    """Base URL of the runbooks; each alert gets `<base>#<alert name in lower case>` as its
    `runbook_url` annotation (the `runbook` annotation always says what to do)."""


class DashboardConfig(ConfigModel):
    """A Grafana dashboard in a ConfigMap that Grafana's dashboard sidecar loads."""

    enabled: bool = True
    """Render the dashboard ConfigMap."""
    namespace: DnsLabel | None = None
    """Namespace of the ConfigMap. Default: `observability.namespace` (Grafana's)."""
    labels: dict[LabelKey, LabelValue] = {"grafana_dashboard": "1"}
    """Labels the sidecar selects (kube-prometheus-stack: `grafana_dashboard: "1"`)."""
    folder: str | None = None
    """Grafana folder, set with the `grafana_folder` annotation (needs the sidecar's
    `folderAnnotation: grafana_folder`)."""
    datasource_uid: Annotated[str, Field(min_length=1, max_length=40)] = "prometheus"
    """UID of the Prometheus datasource (kube-prometheus-stack: `prometheus`)."""


class ObservabilityConfig(ConfigModel):
    enabled: bool = False
    """Render monitors, alerts and the dashboard. Needs the backend's CRDs on the cluster
    (kube-prometheus-stack installs prometheus-operator's; GKE's managed collection its own)."""
    backend: Literal["prometheus-operator", "google-managed"] = "prometheus-operator"
    """Who scrapes and alerts: `prometheus-operator` (PodMonitors, ServiceMonitors, a
    PrometheusRule) or `google-managed`, Google Cloud Managed Service for Prometheus (a
    PodMonitoring per model and for Volcano, one ClusterRules). Managed Service for Prometheus
    alerts only where its rule evaluator has an Alertmanager (its `OperatorConfig`), and serves
    queries through a query frontend the platform team deploys, which KEDA and Grafana read
    (`prometheusUrl`)."""
    namespace: DnsLabel = "monitoring"
    """Namespace of kube-prometheus-stack (Prometheus, Grafana), or with `google-managed` of
    Grafana and the query frontend. A tenant that lists it (or the dashboard's namespace) among
    its namespaces is refused: the tenant would own the monitoring stack."""
    release: Annotated[str, Field(min_length=1, max_length=53)] = KPS_RELEASE
    """Helm release name of kube-prometheus-stack: the default selector label and Prometheus URL
    follow from it. Refused unless it is a name Helm accepts (lower-case DNS subdomain, at most
    53 characters): the URL KEDA queries would name no Service."""
    selector_labels: dict[LabelKey, LabelValue] | None = None
    """Labels on monitors and rules that Prometheus selects them by. Default:
    `{release: <release>}`."""
    prometheus_url: HttpUrl | None = None
    """URL of Prometheus' HTTP API, for KEDA. Default: the Service kube-prometheus-stack creates,
    `http://<fullname>-prometheus.<namespace>:9090`; with `google-managed` the query frontend's,
    `http://frontend.<namespace>:9090`."""
    scrape_interval_seconds: Annotated[int, Field(ge=5, le=600)] = 30
    """How often model and scheduler metrics are scraped. Longer than a model's
    `autoscaling.pollingIntervalSeconds` is warned about (KEDA reads the same sample again)."""
    volcano: bool = True
    """Scrape the Volcano scheduler and controller."""
    alerts: AlertsConfig = AlertsConfig()
    dashboard: DashboardConfig = DashboardConfig()

    @field_validator("release")
    @classmethod
    def _release(cls, value: str) -> str:
        if not _HELM_RELEASE.match(value):
            raise invalid(
                f"`{value}` is not a Helm release name (lower-case letters, digits, '-' and '.', starting and "
                "ending with a letter or digit), so no such release exists and the Prometheus URL KEDA queries "
                "names no Service",
                "write the release as `helm list -n <namespace>` shows it, e.g. `kube-prometheus-stack`",
            )
        return value

    @model_validator(mode="after")
    def _backend_settings(self) -> Self:
        if self.backend != GOOGLE_MANAGED:
            return self
        for key, field_name in (("release", "release"), ("selectorLabels", "selector_labels")):
            if field_name in self.model_fields_set:
                raise invalid(
                    f"`{key}` selects monitors for prometheus-operator; Managed Service for Prometheus scrapes every "
                    "PodMonitoring and evaluates every ClusterRules, with no label to select them",
                    f"remove `{key}`",
                )
        return self

    @property
    def managed(self) -> bool:
        """Google Cloud Managed Service for Prometheus collects and alerts."""
        return self.backend == GOOGLE_MANAGED

    @property
    def labels(self) -> dict[str, str]:
        """Labels on monitors and rules that the collector selects them by (none with
        `google-managed`)."""
        if self.managed:
            return {}
        return dict(self.selector_labels) if self.selector_labels is not None else {"release": self.release}

    @property
    def query_url(self) -> str:
        """Where KEDA queries Prometheus: kube-prometheus-stack names its objects `<fullname>`, the
        release name if it contains the chart name, else `<release>-kube-prometheus-stack`, cut to
        26 characters (the chart's `_helpers.tpl`)."""
        if self.prometheus_url is not None:
            return self.prometheus_url
        if self.managed:
            return f"http://{GMP_FRONTEND}.{self.namespace}:{GMP_FRONTEND_PORT}"
        fullname = self.release if KPS_RELEASE in self.release else f"{self.release}-{KPS_RELEASE}"
        fullname = fullname[:26].rstrip("-")
        return f"http://{fullname}-prometheus.{self.namespace}:9090"

    @property
    def dashboard_namespace(self) -> str:
        return self.dashboard.namespace or self.namespace
