"""`models.<name>.autoscaling`: the replica count follows load instead of the stack file.

The autoscaler owns `replicas` once it is on: the workload is rendered without it, so `pulumi up`
never resets what the autoscaler chose. Placement and quota checks count `maxReplicas`, the most
the model can ask for. For a multi-node model a replica is one LeaderWorkerSet group (a gang), and
the autoscaler scales the LeaderWorkerSet through its scale subresource.
"""

from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from config.schema.base import ConfigModel, cli_float, invalid

AutoscalingMetric = Literal["requestsWaiting", "requestsRunning", "kvCacheUsage"]
KEDA_SETTINGS = ("activation", "polling_interval_seconds", "cooldown_period_seconds", "schedules")
"""What only a ScaledObject has; set on an HPA they would change nothing."""


def _metric_name(value: str) -> str:
    """The API server takes an HPA's metric name only as a path segment (k8s.io/kubernetes
    `pkg/apis/autoscaling/validation`, validateMetricIdentifier: apimachinery IsPathSegmentName)."""
    if value in (".", "..") or "/" in value or "%" in value or not value.isprintable() or len(value) > 253:
        raise invalid(
            f"metric name `{value}` is not one the API server takes for an HPA (no `/` or `%`, not `.` or `..`)",
            "use the name the custom-metrics adapter serves, e.g. `vllm:num_requests_waiting`",
        )
    return value


class ActivationTrigger(ConfigModel):
    """What wakes a model scaled to zero. No vLLM pod runs then, so no vLLM series exists: the
    query must read something that exists without the model's pods (a gateway's request rate)."""

    query: Annotated[str, Field(min_length=1)]
    """PromQL returning one number, e.g. `sum(rate(gateway_requests_total{route="qwen"}[2m]))`.
    Refused when it reads the model's own `vllm:*` series (none exist at zero replicas; a selector
    without a `model` matcher reads every model's), or a series the selected models' vLLM release
    does not export (`vllm:gpu_cache_usage_perc` is gone from 0.11)."""
    threshold: cli_float() = 0.0  # type: ignore[valid-type]
    """The model wakes when the query's value is above this. A negative threshold is warned
    about: a query reading 0 is above it, so the model never scales to zero."""

    @field_validator("query")
    @classmethod
    def _promql(cls, value: str) -> str:
        if problem := promql_problem(value):
            raise invalid(
                f"`{value}` is not PromQL: {problem}", "fix the query (`promtool` or Prometheus' UI parse it)"
            )
        return value


def promql_problem(query: str) -> str | None:
    """Why `query` does not parse as PromQL (None when it does)."""
    import promql_parser

    try:
        promql_parser.parse(query)
    except ValueError as error:
        return str(error)
    return None


# KEDA v2.20.2's cron scaler reads a window's `start` and `end` with robfig/cron v3's parser of five
# fields (`cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)`: no seconds,
# no descriptor such as `@daily`) in the zone Go's `time.LoadLocation` finds in the IANA database
# (keda `pkg/scalers/cron_scaler.go`). croniter parses the expression and the tzdata package holds
# the database; where croniter takes more than robfig does, the difference is refused by name
# (robfig `parser.go`: day of week 0-6, no `L`, `W` or `#`, a range's start not after its end).
_CRON_FIX = "write e.g. `0 8 * * 1-5` (08:00 on weekdays)"
_NAMES = (
    {
        name: n
        for n, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
        )
    },
    {name: n for n, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))},
)
"""Month and day names as robfig reads them (case-insensitive), for comparing a range's ends."""


def _cron(value: str) -> str:
    from croniter import croniter

    text = value.strip()
    if text.startswith("@"):
        raise invalid(f"`{value}` is a descriptor, which KEDA's parser of five fields does not read", _CRON_FIX)
    fields = text.split()
    if len(fields) != 5:
        raise invalid(
            f"`{value}` has {len(fields)} field(s); KEDA reads five (minute hour day-of-month month day-of-week)",
            _CRON_FIX,
        )
    problem = _beyond_keda(fields)
    if problem is None and not croniter.is_valid(text):
        problem = "a value out of its field's range, or a name that is not a month's or a day's three letters"
    if problem is not None:
        raise invalid(f"`{value}` is not a cron expression KEDA reads: {problem}", _CRON_FIX)
    return value


def _beyond_keda(fields: list[str]) -> str | None:
    """What croniter takes and robfig's parser refuses, or None."""
    for index, field in enumerate(fields):
        names = _NAMES[0] if index == 3 else _NAMES[1] if index == 4 else {}
        for part in field.split(","):
            bounds = part.split("/")[0].split("-")
            if any(_quartz_mark(bound) for bound in bounds):
                return f"`{part}`: `L`, `W` and `#` are not cron that KEDA reads"
            numbers = [int(b) if b.isdigit() else names.get(b.lower(), -1) for b in bounds]
            if len(numbers) == 2 and min(numbers) >= 0 and numbers[0] > numbers[1]:
                return f"`{part}`: a range's start is after its end"
            if index == 4 and any(b.isdigit() and int(b) > 6 for b in bounds):
                return f"`{part}`: days of the week are 0 (Sunday) to 6"
    return None


def _quartz_mark(bound: str) -> bool:
    """`L`, `LW`, `15W`, `5L` or `1#2`: Quartz's marks, which croniter reads and robfig does not."""
    upper = bound.upper()
    return "#" in upper or upper in ("L", "LW") or (upper[:-1].isdigit() and upper[-1:] in ("L", "W"))


def _time_zone(value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        found = value not in ("", "Local") and ZoneInfo(value) is not None
    except (ZoneInfoNotFoundError, ValueError):
        found = False
    if not found:
        raise invalid(
            f"`{value}` is not a zone of the IANA time-zone database",
            "write `UTC` or an `Area/Location` name such as `Europe/Berlin`",
        )
    return value


CronExpression = Annotated[str, AfterValidator(_cron)]
TimeZone = Annotated[str, AfterValidator(_time_zone)]


class ScheduleWindow(ConfigModel):
    """A time window in which the model runs at least `replicas` (a KEDA cron trigger): office
    hours, or a night without the model. Outside every window the load metric (and the wake-up)
    decide alone."""

    start: CronExpression
    """When the window opens, e.g. `0 8 * * 1-5` (08:00 on weekdays)."""
    end: CronExpression
    """When it closes, e.g. `0 20 * * 1-5`; not the same as `start`."""
    timezone: TimeZone = "UTC"
    """IANA time zone of `start` and `end`, e.g. `Europe/Berlin`."""
    replicas: Annotated[int, Field(ge=1, le=10_000)]
    """Replicas the model keeps during the window (at most `maxReplicas`)."""

    @model_validator(mode="after")
    def _a_window(self) -> Self:
        if self.start == self.end:
            raise invalid(
                f"the window opens and closes at `{self.start}`, which KEDA refuses",
                "give `end` another time than `start`",
            )
        return self


class AutoscalingConfig(ConfigModel):
    min_replicas: Annotated[int, Field(ge=0, le=10_000)] = 1
    """Fewest replicas. `0` lets the model scale to zero (KEDA only; needs `activation`, or the
    model behind the gateway)."""
    max_replicas: Annotated[int, Field(ge=1, le=10_000)]
    """Most replicas; placement and queue quota checks count this many. For a soft-placed
    multi-node model, a peak above what fits the leaves (one replica per leaf domain) is warned
    about here."""
    metric: AutoscalingMetric = "requestsWaiting"
    """vLLM metric to follow: `requestsWaiting` (queued requests), `requestsRunning` (requests in
    the batch) or `kvCacheUsage` (0..1), averaged over the replicas."""
    target: cli_float(gt=0)  # type: ignore[valid-type]
    """Per-replica value to hold, e.g. 5 waiting requests, or 0.8 KV-cache usage."""
    engine: Literal["keda", "hpa"] = "keda"
    """`keda`: a KEDA ScaledObject querying Prometheus. `hpa`: a HorizontalPodAutoscaler on a
    custom metric, which needs an adapter (e.g. prometheus-adapter) serving `hpaMetricName`."""
    hpa_metric_name: Annotated[str, Field(min_length=1), AfterValidator(_metric_name)] | None = None
    """(hpa) Name under which the custom-metrics adapter serves the metric."""
    activation: ActivationTrigger | None = None
    """(keda) What wakes the model from zero replicas; required with `minReplicas: 0` unless the
    model is behind the gateway (`gateway.enabled`), whose router's queue of held requests wakes it."""
    polling_interval_seconds: Annotated[int, Field(ge=5, le=3600)] = 30
    """(keda) How often KEDA queries Prometheus. Shorter than `observability.scrapeIntervalSeconds`
    is warned about."""
    cooldown_period_seconds: Annotated[int, Field(ge=0, le=86_400)] = 300
    """(keda) Quiet time before scaling to zero. `0` with `minReplicas: 0` is warned about: the
    model would unload at the first quiet poll."""
    schedules: tuple[ScheduleWindow, ...] = ()
    """(keda) Windows in which the model keeps a number of replicas whatever its load, e.g. one
    replica during office hours of a model that sleeps at night: `[{start: "0 8 * * 1-5", end: "0 20
    * * 1-5", timezone: Europe/Berlin, replicas: 1}]`."""
    scale_down_stabilization_seconds: Annotated[int, Field(ge=0, le=3600)] = 300
    """Scale down only to the highest replica count wanted in this window: loading a model takes
    minutes, so flapping is expensive. `0` is warned about."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.min_replicas > self.max_replicas:
            raise invalid(
                f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}",
                "raise `maxReplicas` or lower `minReplicas`",
            )
        if self.metric == "kvCacheUsage" and self.target >= 1:
            raise invalid(
                f"a kvCacheUsage target of {self.target} is never reached (usage is 0..1)",
                "use a fraction such as 0.8",
            )
        if self.engine == "hpa":
            if self.min_replicas == 0:
                raise invalid(
                    "a HorizontalPodAutoscaler cannot scale to zero (minReplicas 0)",
                    "use `engine: keda` with `activation`, or `minReplicas: 1`",
                )
            if not self.hpa_metric_name:
                raise invalid(
                    "an HPA needs the name the custom-metrics adapter serves the metric under",
                    "set `hpaMetricName`, or use `engine: keda`",
                )
            keda_only = [name for name in KEDA_SETTINGS if name in self.model_fields_set]
            if keda_only:
                names = ", ".join(f"`{to_camel(n)}`" for n in keda_only)
                raise invalid(
                    f"{names} {'is a KEDA setting' if len(keda_only) == 1 else 'are KEDA settings'}, "
                    "which an HPA has no place for",
                    "remove it, or use `engine: keda`",
                )
        elif self.hpa_metric_name is not None:
            raise invalid("`hpaMetricName` is an HPA setting", "remove it, or use `engine: hpa`")
        above = [w.replicas for w in self.schedules if w.replicas > self.max_replicas]
        if above:
            raise invalid(
                f"a schedule keeps {max(above)} replicas, above maxReplicas {self.max_replicas}, which KEDA caps it at",
                "lower the window's `replicas`, or raise `maxReplicas`",
            )
        return self
