"""The stack's PrometheusRule, or ClusterRules (pure): alerts a platform team pages on, for its
models and Volcano.

Each alert is one rule over all the models it concerns, not one rule per model, so the rule
object stays small at hundreds of models. Selectors name the stack's models and queues
explicitly, so a rule never watches someone else's workloads. Where vLLM releases disagree on a
metric's name (the KV-cache gauge), the rule reads each model under the name its own release
exposes. Every alert carries a `runbook` annotation that says what to do first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from config.platform_labels import MANAGED_BY, MODEL_METRIC_LABEL
from config.schema.quantity import quantity_value
from config.sections.observability import AlertsConfig
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.upstream.inference_gateway import QUEUE_DURATION_METRIC, QUEUE_SIZE_METRIC
from config.upstream.monitoring import GMP_API_VERSION, MONITORING_API_VERSION
from config.upstream.vllm_metrics import kv_cache_usage_metric
from config.upstream.volcano import VOLCANO_METRICS_SERVICES, VOLCANO_NAMESPACE

RULE_NAME = "volcano-platform"
MODEL_GROUP = "volcano-platform.models"
SCHEDULER_GROUP = "volcano-platform.scheduler"
GATEWAY_GROUP = "volcano-platform.gateway"
QUEUE_SECONDS_ALERT = 30
"""The 90th percentile of the gateway's queue time an interactive request should not exceed."""


def one_of(values: Iterable[str]) -> str:
    """A label matcher for a set of names (`="a"` or `=~"a|b"`). Names here are DNS labels, which
    hold no regular-expression characters but `.`; that one is escaped."""
    names = sorted(set(values))
    if len(names) == 1:
        return f'="{names[0]}"'
    return '=~"' + "|".join(name.replace(".", "\\\\.") for name in names) + '"'


def _alert(
    config: AlertsConfig,
    name: str,
    expr: str,
    minutes: int,
    severity: str,
    summary: str,
    description: str,
    runbook: str,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    # Only the summary is a template (labels, value); the description and the runbook are plain.
    annotations = {"summary": summary, "description": description, "runbook": runbook}
    if config.runbook_url:
        annotations["runbook_url"] = f"{config.runbook_url.rstrip('#')}#{name.lower()}"
    return {
        "alert": name,
        "expr": expr,
        "for": f"{minutes}m",
        "labels": {**config.labels, **(labels or {}), "severity": severity},
        "annotations": annotations,
    }


# kube-state-metrics series of the workload a model's replicas belong to: a Deployment, or the leader
# StatefulSet of a LeaderWorkerSet (named after the LWS; a leader is Ready only once its group serves).
_WORKLOAD_SERIES = {
    "deployment": (
        "kube_deployment_spec_replicas",
        "kube_deployment_status_replicas_available",
        "kube_deployment_status_replicas_updated",
    ),
    "statefulset": (
        "kube_statefulset_replicas",
        "kube_statefulset_status_replicas_ready",
        "kube_statefulset_status_replicas_updated",
    ),
}


def _by_workload(models: Iterable[ModelSpec]) -> dict[tuple[str, str], list[str]]:
    """(kind, namespace) -> model names, for one selector per kind and namespace."""
    by_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for model in models:
        if model.disaggregated:  # LWS makes a leader StatefulSet per LeaderWorkerSet: one per slice and role
            by_kind[("statefulset", model.namespace)] += [view.workload_name for view in model.slice_views()]
        else:
            by_kind[("statefulset" if model.multi_node else "deployment", model.namespace)].append(model.name)
    return dict(sorted(by_kind.items()))


def _not_ready_expr(models: list[ModelSpec]) -> str:
    """A workload that should have replicas but has none ready."""
    terms: list[str] = []
    for (kind, namespace), names in _by_workload(models).items():
        selector = f'{{namespace="{namespace}",{kind}{one_of(names)}}}'
        wanted, ready, _ = _WORKLOAD_SERIES[kind]
        terms.append(f"({wanted}{selector} > 0 and on (namespace, {kind}) {ready}{selector} == 0)")
    return " or ".join(terms)


def _missing_replicas_expr(models: list[ModelSpec]) -> str:
    """How many replicas fewer than wanted are ready, where no rollout explains it: every replica
    runs the current template (a rolling update replaces replicas one budget after another, and is
    watched by `pulumi up`), yet some are not ready. The value is the number missing."""
    terms: list[str] = []
    for (kind, namespace), names in _by_workload(models).items():
        selector = f'{{namespace="{namespace}",{kind}{one_of(names)}}}'
        wanted, ready, updated = _WORKLOAD_SERIES[kind]
        on = f"on (namespace, {kind})"
        terms.append(
            f"(({wanted}{selector} - {on} {ready}{selector}) > 0 and {on} "
            f"({updated}{selector} - {on} {wanted}{selector}) >= 0)"
        )
    return " or ".join(terms)


def _load_budget_minutes(model: ModelSpec) -> int:
    """A replica's load budget in whole minutes (how long it may take to become ready)."""
    return -(-model.config.startup.load_timeout_seconds // 60)


def _kv_cache_expr(models: list[ModelSpec]) -> str:
    by_metric: dict[str, list[str]] = defaultdict(list)
    for model in models:
        by_metric[kv_cache_usage_metric(model.vllm_version)].append(model.name)
    reads = " or ".join(
        f"{metric}{{{MODEL_METRIC_LABEL}{one_of(names)}}}" for metric, names in sorted(by_metric.items())
    )
    return f"max by (namespace, tenant, model, pod) ({reads})"


def model_alerts(spec: PlatformSpec) -> list[dict[str, Any]]:
    config = spec.config.observability.alerts
    models = sorted(spec.models.values(), key=lambda m: m.name)
    if not models:
        return []
    selected = f"{{{MODEL_METRIC_LABEL}{one_of(m.name for m in models)}}}"
    return [
        _alert(
            config,
            "VllmModelNoReadyReplica",
            _not_ready_expr(models),
            config.no_ready_replica_minutes,
            "critical",
            "Model {{ $labels.namespace }}/{{ $labels.deployment }}{{ $labels.statefulset }} has no ready replica",
            "The model should run but none of its replicas is ready: its endpoint refuses every request.",
            "Check the model's pods (`kubectl get pods -n <namespace>`): Pending means the gang does not fit "
            "or its queue is full (see the Volcano alerts); CrashLoopBackOff or a failing readiness probe means the "
            "server does not start (logs of the vllm or leader container).",
        ),
        *_missing_replica_alerts(config, models),
        _alert(
            config,
            "VllmMetricsDown",
            # vLLM serves HTTP, /metrics included, only once its engine is built (the launcher binds the
            # port early and listens only after `build_async_engine_client`), and a PodMonitor scrapes pods
            # that are not Ready: only a Ready pod that cannot be scraped is a problem.
            f'up{selected} == 0 and on (namespace, pod) kube_pod_status_ready{{condition="true"}} == 1',
            config.metrics_down_minutes,
            "warning",
            "Metrics of model {{ $labels.model }} ({{ $labels.pod }}) cannot be scraped",
            "Prometheus cannot read /metrics of a Ready serving pod, so its other alerts and its autoscaler are "
            "blind. (A pod that still loads its weights serves no HTTP at all, and is not Ready: it never fires.)",
            "Check the pod's HTTP port and the PodMonitor's selector, and that the server runs without "
            "--disable-log-stats.",
        ),
        _alert(
            config,
            "VllmRequestsQueueing",
            f"sum by (namespace, tenant, model) (vllm:num_requests_waiting{selected}) > {config.requests_waiting}",
            config.requests_waiting_minutes,
            "warning",
            "{{ $value }} requests wait in model {{ $labels.model }}",
            f"More than {config.requests_waiting} requests have been waiting for a free slot in the batch: "
            "latency grows with the queue.",
            "Add replicas (or raise autoscaling.maxReplicas, if the queue has room), or check for a client flood. "
            "The dashboard's time-to-first-token panel shows what users see.",
        ),
        _alert(
            config,
            "VllmKvCacheNearlyFull",
            f"{_kv_cache_expr(models)} > {config.kv_cache_usage:g}",
            config.kv_cache_minutes,
            "warning",
            "KV cache of model {{ $labels.model }} on {{ $labels.pod }} is {{ $value | humanizePercentage }} full",
            "A server whose KV cache is full preempts running requests, which then start over.",
            "Add replicas, lower maxModelLen or the batch size (maxNumSeqs), or give the model more GPU memory "
            "(gpuMemoryUtilization, tensor parallelism).",
        ),
    ]


def _missing_replica_alerts(config: AlertsConfig, models: list[ModelSpec]) -> list[dict[str, Any]]:
    """`VllmModelReplicasMissing`: fewer replicas ready than wanted for longer than the model's
    load budget. Volcano's own signal does not show it: `volcano_unschedule_task_count` is 0 for a
    PodGroup that is ready (one LWS group running, one pod of a Deployment), however many replicas
    still wait (pkg/scheduler/plugins/gang/gang.go `OnSessionClose`). One rule per load budget, so
    each model waits as long as its weights take to load."""
    by_budget: dict[int, list[ModelSpec]] = defaultdict(list)
    for model in models:
        by_budget[_load_budget_minutes(model)].append(model)
    return [
        _alert(
            config,
            "VllmModelReplicasMissing",
            _missing_replicas_expr(group),
            budget,
            "warning",
            "Model {{ $labels.namespace }}/{{ $labels.deployment }}{{ $labels.statefulset }} has {{ $value }} "
            "replica(s) fewer ready than wanted",
            f"Some replicas wanted by the model have not become ready within its load budget ({budget} min): they "
            "wait for room (a gang that fits no domain, a full queue, higher-priority work) or fail to start.",
            "`kubectl get pods -n <namespace>` for the model's Pending or failing pods; `kubectl describe podgroup` "
            "says why a gang waits. The preview's what-if shows what the scheduler would evict for it.",
            # Keeps the rules of different budgets apart: promtool refuses two rules of one name with equal
            # labels in a group.
            labels={"load_budget": f"{budget}m"},
        )
        for budget, group in sorted(by_budget.items())
    ]


def scheduler_alerts(spec: PlatformSpec) -> list[dict[str, Any]]:
    config = spec.config.observability.alerts
    queues = {t.queue_name: t for t in spec.tenants.values()}
    alerts: list[dict[str, Any]] = []
    # The label is the PodGroup's name (`job_id`, without the namespace). Only the stack's own
    # PodGroups (multi-node models) have names it knows; a Deployment's PodGroup is named by
    # Volcano's controller after its ReplicaSet, and `VllmModelReplicasMissing` watches those models.
    groups = sorted(name for m in spec.models.values() for name in m.pod_group_names)
    if groups:
        alerts.append(
            _alert(
                config,
                "VolcanoGangUnschedulable",
                f"max by (job_id) (volcano_unschedule_task_count{{job_id{one_of(groups)}}}) > 0",
                config.pod_group_pending_minutes,
                "warning",
                "PodGroup {{ $labels.job_id }} has {{ $value }} task(s) that cannot be scheduled",
                "A gang (all pods of a replica) does not fit anywhere it may go, so none of it starts.",
                "`kubectl describe podgroup <job_id>` (in its namespace) says why: not enough free "
                "accelerators in one network domain, a full queue, or a taint. summary.md of the render shows the "
                "replica slots per topology tier.",
            )
        )
    if queues:
        alerts.append(
            _alert(
                config,
                "VolcanoPodGroupsWaiting",
                f"volcano_queue_pod_group_pending_count{{queue_name{one_of(queues)}}} > 0",
                config.pod_group_pending_minutes,
                "warning",
                "{{ $value }} PodGroup(s) wait in queue {{ $labels.queue_name }}",
                "PodGroups are not admitted to their queue: it lacks room for their minimum resources.",
                "Compare the queue's allocation with its capability on the dashboard; raise the tenant's "
                "capability or deserved share, or lower the replicas of its models.",
            )
        )
    capped = [
        name
        for name, tenant in queues.items()
        if quantity_value(str(tenant.config.queue.capability.get(spec.gpu_resource, "0"))) > 0
    ]
    if spec.config.volcano.scheduler.queue_plugin == "capacity" and capped:
        # Both sides are Volcano's milli-values (a GPU counts 1000), so they compare as they are.
        selector = f'{{queue_name{one_of(capped)},resource="{spec.gpu_resource}"}}'
        alerts.append(
            _alert(
                config,
                "VolcanoQueueAtCapability",
                f"volcano_queue_allocated_scalar_resources{selector} >= on (queue_name, resource) "
                f"volcano_queue_capacity_scalar_resources{selector}",
                config.queue_full_minutes,
                "warning",
                f"Queue {{{{ $labels.queue_name }}}} has used all its {spec.gpu_resource}",
                "The tenant's queue is at its capability: new replicas and scale-ups wait until something ends.",
                "Expected at peak for a capped tenant. Otherwise raise the tenant's capability, or reclaim: lower "
                "replicas of its less important models.",
            )
        )
    elif spec.config.volcano.scheduler.queue_plugin == "proportion" and queues:
        # proportion sets `volcano_queue_overused` when a queue's allocation reaches its deserved share on
        # every resource of that share, and allocates nothing beyond it (`proportionPlugin` Overused and
        # Allocatable, pkg/scheduler/plugins/proportion/proportion.go): "full" means "at its share".
        alerts.append(
            _alert(
                config,
                "VolcanoQueueAtDeservedShare",
                f"volcano_queue_overused{{queue_name{one_of(queues)}}} == 1",
                config.queue_full_minutes,
                "warning",
                "Queue {{ $labels.queue_name }} has used its deserved share",
                "The proportion plugin gives a queue no more than its deserved share (its weight's part of the "
                "cluster, within capability and guarantee): new replicas and scale-ups of the tenant wait until it "
                "uses less or other queues' shares shrink.",
                "Expected at peak. Otherwise raise the tenant's weight (or guarantee), or lower replicas of its less "
                "important models.",
            )
        )
    if spec.config.observability.volcano:
        for component, (_, service, _) in VOLCANO_METRICS_SERVICES.items():
            alerts.append(
                _alert(
                    config,
                    f"Volcano{component.capitalize()}Down",
                    f'up{{namespace="{VOLCANO_NAMESPACE}",job="{service}"}} == 0 '
                    f'or absent(up{{namespace="{VOLCANO_NAMESPACE}",job="{service}"}})',
                    config.scheduler_down_minutes,
                    "critical",
                    f"The Volcano {component} is down or not scraped",
                    f"No Volcano {component} is up: "
                    + (
                        "no pod is scheduled, no gang starts."
                        if component == "scheduler"
                        else "PodGroups and queue states are not updated."
                    ),
                    f"`kubectl -n {VOLCANO_NAMESPACE} get pods` and the {component}'s logs; with several replicas "
                    "check leader election.",
                )
            )
    return alerts


def gateway_alerts(spec: PlatformSpec) -> list[dict[str, Any]]:
    """What the routers of the models behind the gateway see: requests held past a model's load,
    requests given up, and a queue that users feel (v1.4.0 `pkg/epp/metrics/metrics.go`)."""
    gateway = spec.gateway
    if gateway is None or not gateway.config.router.flow_control.enabled:
        return []
    config = spec.config.observability.alerts
    pools = f"inference_pool{one_of(gateway.models)}"
    held_minutes = max(5, -(-gateway.queue_timeout_seconds // 60))
    return [
        _alert(
            config,
            "InferenceRequestsHeld",
            f"sum by (namespace, inference_pool) ({QUEUE_SIZE_METRIC}{{{pools}}}) > 0",
            held_minutes,
            "warning",
            "{{ $value }} requests wait in the router of {{ $labels.namespace }}/{{ $labels.inference_pool }}",
            "The model's router has held requests for longer than a model behind the gateway may take to load: "
            "every replica is busy, or the model does not wake from zero.",
            "Check the model's replicas (`kubectl get pods -n <namespace>`) and its ScaledObject's wake-up "
            "trigger (`kubectl describe scaledobject`); add replicas or raise autoscaling.maxReplicas.",
        ),
        _alert(
            config,
            "InferenceRequestsDropped",
            f"sum by (namespace, inference_pool, priority, outcome) (rate({QUEUE_DURATION_METRIC}_count"
            f'{{{pools},outcome=~"Rejected.*|Evicted.*"}}[5m])) > 0',
            5,
            "warning",
            "Requests of band {{ $labels.priority }} to {{ $labels.inference_pool }} end {{ $labels.outcome }}",
            "The router gives up requests: RejectedCapacity (a band's queue is full), EvictedTTL (held past "
            "gateway.router.flowControl.queueTimeoutSeconds), EvictedContextCancelled (the client left first).",
            "Add replicas; for EvictedTTL on a model that scales from zero, check that it loads within the queue's "
            "timeout; for RejectedCapacity raise flowControl.maxBytesPerBand.",
        ),
        _alert(
            config,
            "InferenceQueueTimeHigh",
            f"histogram_quantile(0.9, sum by (le, namespace, inference_pool, priority) (rate({QUEUE_DURATION_METRIC}"
            f'_bucket{{{pools},outcome="Dispatched"}}[5m]))) > {QUEUE_SECONDS_ALERT}',
            10,
            "warning",
            "Requests of band {{ $labels.priority }} to {{ $labels.inference_pool }} wait "
            "{{ $value | humanizeDuration }} (p90)",
            f"One request in ten waited more than {QUEUE_SECONDS_ALERT} seconds in the router's queue before a "
            "replica took it: the model is short of replicas for that band.",
            "Add replicas (or raise autoscaling.maxReplicas); if a lower band waits behind a busy higher one, "
            "that is the order the tenants' PriorityClasses ask for.",
        ),
    ]


def rules_manifest(spec: PlatformSpec) -> dict[str, Any]:
    """The alerts as the backend takes them: a PrometheusRule beside Volcano, or a ClusterRules
    (cluster-scoped: its rules see every namespace's series, as these select models across
    tenants) for Managed Service for Prometheus."""
    groups = [
        {"name": name, "rules": rules}
        for name, rules in (
            (MODEL_GROUP, model_alerts(spec)),
            (GATEWAY_GROUP, gateway_alerts(spec)),
            (SCHEDULER_GROUP, scheduler_alerts(spec)),
        )
        if rules
    ]
    if spec.config.observability.managed:
        metadata: dict[str, Any] = {"name": RULE_NAME, "labels": dict(MANAGED_BY)}
        return {"apiVersion": GMP_API_VERSION, "kind": "ClusterRules", "metadata": metadata, "spec": {"groups": groups}}
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {
            "name": RULE_NAME,
            "namespace": VOLCANO_NAMESPACE,
            "labels": {**MANAGED_BY, **spec.config.observability.labels},
        },
        "spec": {"groups": groups},
    }
