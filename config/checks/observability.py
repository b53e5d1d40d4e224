"""Checks of metrics, alerts and autoscaling: what would leave a monitor, an alert or an
autoscaler blind, and settings that contradict each other."""

from __future__ import annotations

from config.errors import Problem, join_path
from config.spec.platform import PlatformSpec
from config.upstream.vllm_metrics import DISABLE_STATS_FLAG
from config.upstream.volcano_metrics import VOLCANO_METRICS_VERSION


def check_observability(spec: PlatformSpec) -> list[Problem]:
    observability = spec.config.observability
    problems: list[Problem] = []
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
