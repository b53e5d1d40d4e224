"""Metrics, alerts and a dashboard: PodMonitors and ServiceMonitors (`monitors.py`), the
PrometheusRule (`alerts.py`), the Grafana dashboard (`dashboard.py`) and the component that
registers them (`component.py`)."""
