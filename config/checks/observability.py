"""Checks of metrics, alerts and autoscaling: what would leave a monitor, an alert or an
autoscaler blind, and settings that contradict each other."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from config.errors import Problem, join_path
from config.platform_labels import MODEL_METRIC_LABEL
from config.schema.promql_shape import empty_operand, returns_one_series
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.upstream.monitoring import exposed_series
from config.upstream.versions import version_text
from config.upstream.vllm_metrics import DISABLE_STATS_FLAG, VLLM_METRICS, vllm_series
from config.upstream.volcano_metrics import VOLCANO_METRICS_VERSION

# Labels each alert sets itself: `severity` (Alertmanager routes pages on it), `load_budget`, and
# `alertname`, which Prometheus sets from the rule's name.
ALERT_OWN_LABELS = ("severity", "alertname", "load_budget")
ANY_VLLM_SERIES = frozenset(
    series for name, metric in VLLM_METRICS.items() for series in exposed_series(name, metric.kind, True)
)


def check_observability(spec: PlatformSpec) -> list[Problem]:
    observability = spec.config.observability
    problems: list[Problem] = [*_dead_settings(spec), *_alert_labels(spec), *_alert_windows(spec)]
    for model in spec.models.values():
        path = join_path("models", model.name)
        scaling = model.config.autoscaling
        if scaling is not None and not observability.enabled:
            problems.append(
                Problem(
                    join_path(path, "autoscaling"),
                    "the autoscaler follows the model's vLLM metrics, which are scraped only with observability on",
                    "set `observability.enabled: true` (prometheus-operator on the cluster), or remove `autoscaling`",
                )
            )
        replicas = model.config.replicas
        if (
            scaling is not None
            and "replicas" in model.config.model_fields_set
            and not scaling.min_replicas <= replicas <= scaling.max_replicas
        ):
            problems.append(
                Problem(
                    join_path(path, "replicas"),
                    f"under the autoscaler `replicas` is where a new workload starts, and it must lie between "
                    f"`minReplicas` ({scaling.min_replicas}) and `maxReplicas` ({scaling.max_replicas})",
                    f"set `replicas` between {scaling.min_replicas} and {scaling.max_replicas}, or remove it (start "
                    f"at {scaling.min_replicas})",
                    got=replicas,
                )
            )
        if (observability.enabled or scaling is not None) and DISABLE_STATS_FLAG in model.config.engine.extra_args:
            index = model.config.engine.extra_args.index(DISABLE_STATS_FLAG)
            readers = (["the alerts", "the dashboard"] if observability.enabled else []) + (
                ["the autoscaler"] if scaling is not None else []
            )
            problems.append(
                Problem(
                    join_path(path, "engine", "extraArgs", index),
                    f"`{DISABLE_STATS_FLAG}` turns off every vllm:* metric, which "
                    + (", ".join(readers[:-1]) + " and " + readers[-1] if len(readers) > 1 else readers[0])
                    + " read",
                    f"remove `{DISABLE_STATS_FLAG}`",
                )
            )
        problems += _timing(spec, model) + _after_the_alerts(spec, model) + _several_series(model)
        problems += _activation(spec, model)
    version = tuple(int(p) for p in spec.config.volcano.version.removeprefix("v").split(".")[:2])
    if observability.enabled and observability.volcano and version != VOLCANO_METRICS_VERSION:
        known = ".".join(map(str, VOLCANO_METRICS_VERSION))
        problems.append(
            Problem(
                "volcano.version",
                f"the Volcano alerts and dashboard use the metric names of Volcano {known}; this stack installs "
                f"{spec.config.volcano.version}, whose names were not checked",
                "check the scheduler's /metrics after the upgrade, then update config/metrics_catalog.py",
                severity="warning",
            )
        )
    return problems


def _dead_settings(spec: PlatformSpec) -> list[Problem]:
    """Alert and dashboard settings that change nothing: observability is off, or the part is."""
    observability = spec.config.observability
    problems: list[Problem] = []
    for part in ("alerts", "dashboard"):
        settings = getattr(observability, part)
        given = sorted(settings.model_fields_set - {"enabled"})
        if not given or part not in observability.model_fields_set:
            continue
        off = (
            "`observability.enabled` is false"
            if not observability.enabled
            else f"`observability.{part}.enabled` is false"
            if not settings.enabled
            else None
        )
        if off is None:
            continue
        key = type(settings).model_fields[given[0]].alias or given[0]
        problems.append(
            Problem(
                join_path("observability", part, key),
                f"{off}, so no {'PrometheusRule' if part == 'alerts' else 'dashboard'} is rendered and this setting "
                "changes nothing",
                "turn it on (`enabled: true`), or remove the setting",
            )
        )
    return problems


def _alert_labels(spec: PlatformSpec) -> list[Problem]:
    labels = spec.config.observability.alerts.labels
    return [
        Problem(
            join_path("observability", "alerts", "labels", key),
            f"every alert sets `{key}` itself ("
            + ("`critical` or `warning`, which Alertmanager routes pages on" if key == "severity" else "per rule")
            + "); one value for all alerts would stop critical alerts paging, so this label is dropped",
            "route with another label (e.g. `team`), and leave `severity` to the alerts",
            got=labels[key],
            severity="warning",
        )
        for key in ALERT_OWN_LABELS
        if key in labels
    ]


_ALERT_WINDOWS = (
    "no_ready_replica_minutes",
    "metrics_down_minutes",
    "requests_waiting_minutes",
    "kv_cache_minutes",
    "pod_group_pending_minutes",
    "queue_full_minutes",
    "scheduler_down_minutes",
)


def _alert_windows(spec: PlatformSpec) -> list[Problem]:
    observability = spec.config.observability
    if not observability.enabled or not observability.alerts.enabled:
        return []
    scrape = observability.scrape_interval_seconds
    alerts = observability.alerts
    problems: list[Problem] = []
    for field in _ALERT_WINDOWS:
        minutes = getattr(alerts, field)
        if minutes * 60 < 2 * scrape:
            key = type(alerts).model_fields[field].alias or field
            problems.append(
                Problem(
                    join_path("observability", "alerts", key),
                    f"{minutes} min is shorter than two scrape intervals ({scrape} s each): the condition is judged on "
                    "a single sample, so one slow or missed scrape fires the alert",
                    f"hold it for at least {-(-2 * scrape // 60)} min (two scrapes), or scrape more often",
                    got=minutes,
                    severity="warning",
                )
            )
    return problems


def _timing(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    scaling = model.config.autoscaling
    if scaling is None:
        return []
    path = join_path("models", model.name, "autoscaling")
    scrape = spec.config.observability.scrape_interval_seconds
    problems: list[Problem] = []
    if scaling.engine == "keda" and scaling.polling_interval_seconds < scrape:
        problems.append(
            Problem(
                join_path(path, "pollingIntervalSeconds"),
                f"KEDA polls every {scaling.polling_interval_seconds} s, but the metrics are scraped every {scrape} s "
                "(`observability.scrapeIntervalSeconds`): most polls read the same sample, and the replicas follow "
                "load a scrape late",
                f"poll at most as often as the scrape ({scrape} s), or scrape more often",
                got=scaling.polling_interval_seconds,
                severity="warning",
            )
        )
    if scaling.engine == "keda" and scaling.min_replicas == 0 and scaling.cooldown_period_seconds == 0:
        problems.append(
            Problem(
                join_path(path, "cooldownPeriodSeconds"),
                "with no cooldown the model scales to zero at the first quiet poll, and the next request waits for a "
                f"whole model load ({model.config.startup.load_timeout_seconds} s budget)",
                "keep a cooldown longer than the gaps between requests (the default is 300 s)",
                got=0,
                severity="warning",
            )
        )
    if scaling.scale_down_stabilization_seconds == 0:
        problems.append(
            Problem(
                join_path(path, "scaleDownStabilizationSeconds"),
                "with no stabilisation window every dip in load removes replicas at once, and loading one back takes "
                "minutes: the replica count flaps",
                "keep a window of a few minutes (the default is 300 s)",
                got=0,
                severity="warning",
            )
        )
    if scaling.activation is not None and scaling.activation.threshold < 0:
        problems.append(
            Problem(
                join_path(path, "activation", "threshold"),
                "KEDA keeps the model awake while the query is above the threshold; a query that reads 0 without "
                "traffic is always above a negative one, so the model never scales to zero",
                "use 0 (wake on any traffic) or a positive rate",
                got=scaling.activation.threshold,
                severity="warning",
            )
        )
    return problems


def _after_the_alerts(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A target the autoscaler reaches only after the alert on the same signal pages: the backlog
    alert sums the waiting requests of a model's servers, the KV-cache alert watches each server,
    while the autoscaler holds the average per replica at its target."""
    scaling, observability = model.config.autoscaling, spec.config.observability
    if scaling is None or not (observability.enabled and observability.alerts.enabled):
        return []
    alerts = observability.alerts
    fewest = max(scaling.min_replicas, 1)
    if scaling.metric == "requestsWaiting" and fewest * scaling.target >= alerts.requests_waiting:
        why = (
            f"at {fewest} replica(s) the autoscaler adds one only once more than {fewest * scaling.target:g} requests "
            f"wait, but the backlog alert pages at {alerts.requests_waiting} (`observability.alerts.requestsWaiting`)"
        )
        fix = f"hold a target below {alerts.requests_waiting / fewest:g}, or raise the alert's threshold"
    elif scaling.metric == "kvCacheUsage" and scaling.target >= alerts.kv_cache_usage:
        why = (
            f"the autoscaler adds replicas only once the KV cache is {scaling.target:g} used on average, but the alert "
            f"pages when one server's passes {alerts.kv_cache_usage:g} (`observability.alerts.kvCacheUsage`)"
        )
        room = " (0.8 leaves room to load a replica)" if alerts.kv_cache_usage > 0.8 else ""
        fix = f"hold a target below {alerts.kv_cache_usage:g}{room}"
    else:
        return []
    return [
        Problem(
            join_path("models", model.name, "autoscaling", "target"),
            f"{why}: every scale-up comes after a page",
            fix,
            got=scaling.target,
            severity="warning",
        )
    ]


def _several_series(model: ModelSpec) -> list[Problem]:
    """KEDA's Prometheus scaler takes a query whose result is one element, a vector of one series
    or a scalar (keda-docs `scalers/prometheus.md`: "query must return a vector/scalar single
    element response"), so a wake-up query that can return several fails once several exist. And
    an operation between two series (`sum(a) + sum(b)`) returns nothing while either side has no
    series, which KEDA reads as 0 (`ignoreNullValues`, true by default, same page): the model
    stays asleep while the other side counts requests."""
    scaling = model.config.autoscaling
    if scaling is None or scaling.activation is None:
        return []
    import promql_parser

    query = scaling.activation.query
    try:
        tree = promql_parser.parse(query)
    except ValueError:
        return []  # reported by the section
    path = join_path("models", model.name, "autoscaling", "activation", "query")
    problems: list[Problem] = []
    if not returns_one_series(tree):
        problems.append(
            Problem(
                path,
                "the query can return several series (one per pod, route or label value), and KEDA refuses a "
                "result of more than one, so the model would not wake",
                "aggregate it to one number (`sum(...)`, `max(...)`; a quantile's buckets grouped by `le` alone)",
                got=query,
                severity="warning",
            )
        )
    if empty_operand(tree):
        problems.append(
            Problem(
                path,
                "an operation between two series returns nothing while either has no series (a counter no "
                "request has touched yet), and KEDA reads nothing as 0: the model would stay asleep",
                "give each side a value when it has no series: `(sum(...) or vector(0)) + (sum(...) or vector(0))`",
                got=query,
                severity="warning",
            )
        )
    return problems


def vector_selectors(query: str) -> list[Any]:
    """Every series selector of a PromQL expression."""
    import promql_parser

    found: list[Any] = []
    tree = promql_parser.parse(query)
    promql_parser.walk(
        tree, lambda node: found.append(node) if isinstance(node, promql_parser.VectorSelector) else None
    )
    return found


def selected_models(selector: Any, models: Iterable[str], variable: str | None = None) -> set[str]:
    """The stack's models a selector can match, from its `model` matchers; a matcher on
    `variable` (a dashboard's `$model`) stands for any model."""
    import promql_parser

    selected = set(models)
    for matcher in selector.matchers.matchers:
        if matcher.name != MODEL_METRIC_LABEL or (variable is not None and matcher.value == variable):
            continue
        if matcher.op == promql_parser.MatchOp.Equal:
            selected &= {matcher.value}
        elif matcher.op == promql_parser.MatchOp.Re:
            selected &= {alternative.replace("\\.", ".") for alternative in matcher.value.split("|")}
        elif matcher.op == promql_parser.MatchOp.NotEqual:
            selected -= {matcher.value}
    return selected


def _activation(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A wake-up query must read series that exist while the model has no pod, in the release that
    would export them."""
    scaling = model.config.autoscaling
    if scaling is None or scaling.activation is None:
        return []
    path = join_path("models", model.name, "autoscaling", "activation", "query")
    query = scaling.activation.query
    try:
        selectors = vector_selectors(query)
    except ValueError:
        return []  # reported by the section
    for selector in selectors:
        name = selector.name or ""
        if not name.startswith("vllm:"):
            continue
        if name not in ANY_VLLM_SERIES:
            return [_never(path, f"`{name}` is a series no vLLM release exports", query)]
        selected = selected_models(selector, spec.models)
        if model.name in selected:
            return [
                _never(
                    path,
                    f"`{name}` is the model's own vLLM series, which do not exist while it has no pod",
                    query,
                )
            ]
        lacking = sorted(m for m in selected if name not in vllm_series(spec.models[m].vllm_version))
        if lacking:
            versions = ", ".join(f"`{m}` (vLLM {version_text(spec.models[m].vllm_version)})" for m in lacking)
            return [_never(path, f"`{name}` is not exported by the release of {versions}", query)]
    return []


def _never(path: str, why: str, query: str) -> Problem:
    return Problem(
        path,
        f"{why}, so the query returns nothing and the model, once at zero, never wakes",
        "query a series that exists without the model's pods (a gateway's or ingress' request rate for it), "
        f"or another model's series with its `{MODEL_METRIC_LABEL}` label",
        got=query,
    )
