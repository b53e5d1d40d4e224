"""Every query the render holds names series that exist for what it selects.

Alert rules, dashboard panels and autoscaler triggers are PromQL. A query that names a series its
target never exposes parses, evaluates to nothing and stays quiet forever, so this check parses
each one (with `promql-parser`, the same grammar as Prometheus) and looks each selected series up
in `config/metrics_catalog.py`: a `vllm:*` series must exist in the release of every model the
selector can match (its `model` matchers decide which), a `volcano_*` series must be set with the
stack's queue plugin, and `kube_*` series must be ones kube-state-metrics exports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from components.observability.dashboard import CONFIGMAP_NAME, DASHBOARD_FILE
from config.checks.observability import selected_models, vector_selectors
from config.spec.platform import PlatformSpec
from config.upstream.inference_gateway import ROUTER_SERIES
from config.upstream.vllm_metrics import vllm_series
from config.upstream.volcano_metrics import KUBE_STATE_METRICS, PROMETHEUS_SERIES, volcano_series
from offline.manifests import Rendered

# The trigger that carries the user's own activation query, whose series the catalog cannot know.
USER_TRIGGER = "activation"


@dataclass(frozen=True)
class Query:
    where: str
    """File and position of the query in it."""
    expr: str


def rendered_queries(rendered: Rendered) -> Iterator[Query]:
    for obj in rendered.objects:
        manifest = obj.manifest
        if obj.kind in ("PrometheusRule", "ClusterRules"):
            for g, group in enumerate(manifest["spec"]["groups"]):
                for r, rule in enumerate(group["rules"]):
                    name = rule.get("alert") or rule.get("record")
                    yield Query(f"{obj.file}: groups[{g}].rules[{r}] ({name})", str(rule["expr"]))
        elif obj.kind == "ConfigMap" and obj.name == CONFIGMAP_NAME and DASHBOARD_FILE in manifest.get("data", {}):
            dashboard = json.loads(manifest["data"][DASHBOARD_FILE])
            for panel in dashboard["panels"]:
                for target in panel.get("targets", []):
                    yield Query(f"{obj.file}: panel `{panel['title']}` {target['refId']}", target["expr"])
        elif obj.kind == "ScaledObject":
            for t, trigger in enumerate(manifest["spec"]["triggers"]):
                if trigger["type"] == "prometheus" and trigger.get("name") != USER_TRIGGER:
                    yield Query(f"{obj.file}: triggers[{t}]", trigger["metadata"]["query"])


def query_problems(spec: PlatformSpec, query: Query) -> list[str]:
    try:
        selectors = vector_selectors(query.expr)
    except ValueError as error:
        return [f"{query.where}: does not parse as PromQL ({error}): {query.expr}"]
    models = {m.name: m for m in spec.models.values()}
    volcano = volcano_series(spec.config.volcano.scheduler.queue_plugin)
    problems: list[str] = []
    for selector in selectors:
        name = selector.name
        if name is None:
            problems.append(f"{query.where}: a selector without a metric name cannot be checked")
        elif name.startswith("vllm:"):
            selected = selected_models(selector, models, variable="$model")
            if not selected:
                problems.append(f"{query.where}: `{name}` selects none of the stack's models")
            lacking = sorted(m for m in selected if name not in vllm_series(models[m].vllm_version))
            if lacking:
                problems.append(
                    f"{query.where}: `{name}` does not exist in the vLLM release of "
                    + ", ".join(f"`{m}`" for m in lacking)
                )
        elif name.startswith("volcano_"):
            if name not in volcano:
                problems.append(
                    f"{query.where}: Volcano does not expose `{name}` with the "
                    f"`{spec.config.volcano.scheduler.queue_plugin}` queue plugin"
                )
        elif name in ROUTER_SERIES:
            if spec.gateway is None:
                problems.append(f"{query.where}: `{name}` is the gateway router's, and no model is behind the gateway")
        elif name not in KUBE_STATE_METRICS | PROMETHEUS_SERIES:
            problems.append(f"{query.where}: `{name}` is no series this platform knows")
    return problems


def check_queries(spec: PlatformSpec, rendered: Rendered) -> tuple[list[str], int]:
    """(problems, number of queries checked)."""
    problems: list[str] = []
    count = 0
    for query in rendered_queries(rendered):
        count += 1
        problems += query_problems(spec, query)
    return problems, count
