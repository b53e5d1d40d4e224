"""prometheus-operator (v0.93.0), Managed Service for Prometheus (v0.17.2) and KEDA (v2.20.2), which
the stack renders objects for but does not install, and how Prometheus client libraries name the
series they expose."""

from __future__ import annotations

from typing import Final, Literal

MONITORING_API_VERSION: Final = "monitoring.coreos.com/v1"
GMP_API_VERSION: Final = "monitoring.googleapis.com/v1"
"""Google Cloud Managed Service for Prometheus (prometheus-engine v0.17.2): PodMonitoring,
ClusterRules."""
KEDA_API_VERSION: Final = "keda.sh/v1alpha1"

MetricKind = Literal["gauge", "counter", "histogram"]


def exposed_series(name: str, kind: MetricKind, suffix_total: bool) -> tuple[str, ...]:
    """The series a metric appears as when scraped: histograms as `_bucket`, `_sum` and `_count`;
    counters with `_total` where the client library appends it (Python's prometheus_client does,
    Go's client_golang does not)."""
    if kind == "histogram":
        return (f"{name}_bucket", f"{name}_sum", f"{name}_count")
    if kind == "counter" and suffix_total:
        return (f"{name}_total",)
    return (name,)
