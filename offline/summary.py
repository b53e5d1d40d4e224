"""`summary.md`: what a render contains, for a reviewer who has not read the stack file."""

from __future__ import annotations

from collections import Counter
from typing import Any

from config.sections.models import ModelConfig
from config.spec.images import stack_images
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import scheduler_conf
from offline.manifests import Rendered
from offline.markdown import fence
from offline.summary_data import (
    build_summary_data,
    placement_words,
    replicas_text,
    replicas_words,
    topology_words,
)


def _quota(resources: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in resources.items()) or "-"


def _replicas_text(cfg: ModelConfig) -> str:
    """`2 x 4` (replicas x pods), or `1..8 x 4` with the autoscaler and what it follows."""
    scaling = cfg.autoscaling
    size = f"{replicas_text(cfg)} x {cfg.nodes_per_replica}"
    return size if scaling is None else f"{size} ({scaling.engine}: {scaling.metric} {scaling.target:g}/replica)"


def _replicas_cell(replicas: dict[str, Any], pods: int) -> str:
    """`2 x 4` (replicas x pods), or `1..8 x 4` with the autoscaler and what it follows."""
    size = f"{replicas_words(replicas)} x {pods}"
    if not replicas.get("autoscaled"):
        return size
    return f"{size} ({replicas['engine']}: {replicas['metric']} {replicas['target']:g}/replica)"


def _slice_cells(model: ModelSpec, m: dict[str, Any], resource: str) -> list[str]:
    """Replicas x pods, devices per pod and parallelism of a model with prefill and decode apart:
    its replicas are slices, each with its roles' instances (the slice table lists them)."""
    views = model.role_views
    pods = " + ".join(
        f"{_instances(view)} {view.serving_role}" + (f" x {view.gang.pods}" if view.gang.pods > 1 else "")
        for view in views
    )
    return [
        f"{replicas_words(m['replicas'])} slices x ({pods})",
        ", ".join(f"{view.serving_role} {view.gpus_per_pod} {resource}" for view in views),
        ", ".join(
            f"{view.serving_role} tp {view.config.tensor_parallel} x pp {view.config.pipeline_parallel}"
            for view in views
        ),
    ]


def _instances(view: ModelSpec) -> str:
    low, high = view.min_replicas, view.config.planned_replicas
    return str(high) if low == high else f"{low}..{high}"


def _labels(labels: dict[str, str]) -> str:
    return ", ".join(f"`{key}: {value}`" for key, value in labels.items())


def _pools(pools: dict[str, Any], words: str) -> list[str]:
    if not pools:
        return []
    rows = []
    for name, pool in pools.items():
        size = (
            str(pool["nodes"]) if pool["maxNodes"] is None else f"{pool['minNodes']}..{pool['maxNodes']} (autoscaled)"
        )
        product = f" {pool['product']}" if pool["product"] else ""
        rows.append(
            [
                name,
                ", ".join(f"`{k}={v}`" for k, v in pool["selector"].items()),
                f"{pool['acceleratorsPerNode']} x {pool['resource']}{product} (type `{pool['type']}`)",
                size,
                pool["fabric"] or "none",
                ", ".join(pool["models"]) or "-",
            ]
        )
    return ["## Pools", "", *_table(["pool", "selector", f"{words} per node", "nodes", "fabric", "models"], rows), ""]


def _observability(spec: PlatformSpec, rendered: Rendered) -> list[str]:
    """What is scraped, which alerts exist at which thresholds, and who scales what."""
    observability = spec.config.observability
    if not observability.enabled:
        return []
    lines = [
        "## Observability",
        "",
        f"- monitors labelled {_labels(observability.labels)}: {len(spec.models)} model(s)"
        f"{f', {len(spec.gateway.models)} router(s)' if spec.gateway else ''}"
        f"{', the Volcano scheduler and controller' if observability.volcano else ''}, every "
        f"{observability.scrape_interval_seconds}s",
        f"- Prometheus for autoscalers: {observability.query_url}",
    ]
    rule = next((o for o in rendered.objects if o.kind == "PrometheusRule"), None)
    if rule is not None:
        rules = [r for group in rule.manifest["spec"]["groups"] for r in group["rules"]]
        lines.append(f"- alerts ({rule.file}):")
        lines += [f"  - `{r['alert']}` ({r['labels']['severity']}, for {r['for']})" for r in rules]
    if observability.dashboard.enabled:
        lines.append(
            f"- dashboard: ConfigMap in `{observability.dashboard_namespace}` labelled "
            f"{_labels(observability.dashboard.labels)}"
        )
    scaled = [m for m in spec.models.values() if m.config.autoscaling is not None]
    if scaled:
        lines.append("- autoscaled models (the workload has no `replicas`; the autoscaler owns it):")
        lines += [f"  - `{m.name}`: {_replicas_text(m.config)}" for m in scaled]
    lines.append("")
    return lines


def _gateway(spec: PlatformSpec) -> list[str]:
    """Who reaches which model through the gateway, at which band: what a reviewer checks against
    the tenants' agreements."""
    gateway = spec.gateway
    if gateway is None:
        return []
    shared = gateway.config.gateway
    where = f"`{shared.namespace}/{shared.name}`" + (
        " (existing)" if shared.existing else f", class `{gateway.config.class_name}`"
    )
    flow = gateway.config.router.flow_control
    lines = [
        "## Inference gateway",
        "",
        f"Gateway {where}. Request bands rank the PriorityClasses around `{gateway.baseline}` (band 0); "
        + (
            f"flow control holds requests up to {gateway.queue_timeout_seconds}s, {flow.fairness} between the "
            "tenants of a band."
            if flow.enabled
            else "flow control is off."
        )
        + (
            " Each route sets its tenant's objective and fairness headers."
            if gateway.config.tenant_headers == "route"
            else " The proxy in front of the gateway sets the tenants' objective and fairness headers."
        ),
        "",
    ]
    rows = [
        [f"`{model}`", f"`{c.tenant}`", f"`{c.priority_class}`", str(c.band), ", ".join(c.hostnames)]
        for model, consumers in gateway.consumers.items()
        for c in consumers
    ]
    return [*lines, *_table(["model", "tenant", "class", "band", "hostnames"], rows), ""]


def _slices(spec: PlatformSpec, words: str) -> list[str]:
    """Per slice and role of the models with prefill and decode apart: the instances, their
    accelerators and where the plan puts the slice (Volcano keeps a slice in one domain of its
    tier, each instance in one of its role's)."""
    rows = []
    for model in spec.models.values():
        if not model.disaggregated:
            continue
        placement = spec.placements.get(model.name)
        planned = placement.domains if placement is not None else ()
        for index in range(model.config.replicas):
            domain = (planned[index] or "the cluster") if index < len(planned) else "no room"
            for role, view in zip(model.slice_gang.roles, model.role_views, strict=True):
                instances = (
                    str(role.min_instances)
                    if role.min_instances == role.max_instances
                    else f"{role.min_instances}-{role.max_instances}"
                )
                rows.append(
                    [
                        f"`{model.name}`",
                        str(index),
                        role.role,
                        instances,
                        f"{role.instance.pods} x {view.gpus_per_pod}",
                        topology_words(_tier_of(view)),
                        f"`{domain}`",
                    ]
                )
    if not rows:
        return []
    header = ["model", "slice", "role", "instances", f"pods x {words} per instance", "each instance", "slice in"]
    return ["## Prefill and decode apart", "", *_table(header, rows), ""]


def _tier_of(view: Any) -> dict[str, Any] | None:
    topology = view.config.topology
    if topology is None:
        return None
    return {"mode": topology.mode, "highestTier": view.highest_tier}


def _hypernode_names(spec: PlatformSpec) -> str:
    """How the domains below are found on the cluster, and the name `whatif` and `explain` give
    each, so a reader can match the three."""
    topology = spec.topology
    assert topology is not None
    shaped = any(d.generated for d in topology.domains.values())
    pools = (
        " Domains of a pool's shape are named here `<pool>/tier<N>-<index>`; on the cluster they are whatever "
        "values the provisioner's tier labels hold, and `whatif` and `explain` name one `pool <pool>, "
        "<tier label>=<value>`. A pool is listed as the domain above the top tier."
        if shaped
        else ""
    )
    if topology.hyper_nodes == "explicit":
        return "Each named domain is a HyperNode of the same name." + pools
    if topology.hyper_nodes == "none":
        return "No HyperNodes: the scheduler places no job by the network topology." + pools
    named = topology.named_domains
    example = f" (`{named[0].name} (HyperNode hypernode-…)`)" if named else ""
    return (
        "Volcano's label discovery builds a HyperNode per value of a tier label and names it itself "
        "(`hypernode-…`)"
        + (
            f"; a named domain is the HyperNode holding exactly its nodes, which `whatif` and `explain` name as "
            f"here with Volcano's name beside it{example}."
            if named
            else "."
        )
        + pools
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def render_summary(spec: PlatformSpec, rendered: Rendered) -> str:
    words = spec.accelerator.words
    lines = [f"# Stack `{spec.stack}`: cluster `{spec.cluster_name}`", ""]
    kinds = Counter(o.kind + (" (patch)" if o.patch else "") for o in rendered.objects)
    lines += ["## Resources", ""]
    lines += _table(["kind", "count"], [[k, str(n)] for k, n in sorted(kinds.items())])
    lines += [
        "",
        f"{len(rendered.objects)} Kubernetes objects, {len(rendered.releases)} Helm release(s): "
        + ", ".join(f"`{r.data['release']}` {r.data['chart']} {r.data['version']}" for r in rendered.releases),
        "",
    ]

    conf = scheduler_conf(
        spec.config.volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models, spec.node_groups
    )
    lines += ["## Scheduler", "", f"- actions: `{conf['actions']}`"]
    for index, tier in enumerate(conf["tiers"], start=1):
        lines.append(f"- tier {index}: " + ", ".join(f"`{p['name']}`" for p in tier["plugins"]))
    lines += [
        f"- queue plugin: `{spec.config.volcano.scheduler.queue_plugin}`"
        + (" with hierarchy" if spec.hierarchy else ""),
        "",
    ]

    # The tables are drawn from summary.json's data, the form pull requests compare.
    data = build_summary_data(spec)
    lines += ["## Tenants and quotas", ""]
    rows = [
        [
            name,
            t["queue"],
            t["parent"] or "root",
            ", ".join(t["namespaces"]) or "-",
            str(t["weight"]),
            "yes" if t["reclaimable"] else "no",
            _quota(t["capability"]),
            _quota(t["deserved"]),
            _quota(t["guarantee"]),
        ]
        for name, t in data["tenants"].items()
    ]
    lines += _table(
        ["tenant", "queue", "parent", "namespaces", "weight", "reclaimable", "capability", "deserved", "guarantee"],
        rows,
    )
    lines += [
        "",
        "Priority classes: "
        + ", ".join(
            f"`{name}` ({pc.value}{', never preempts' if pc.preemption_policy == 'Never' else ''})"
            for name, pc in sorted(spec.priority_classes.items(), key=lambda item: -item[1].value)
        ),
        "",
    ]

    lines += ["## Models", ""]
    rows = [
        [
            name,
            m["kind"],
            f"{m['tenant']}/{m['namespace']}",
            m["queue"],
            m["priorityClass"],
            *(
                _slice_cells(spec.models[name], m, spec.gpu_resource)
                if spec.models[name].disaggregated
                else [
                    _replicas_cell(m["replicas"], m["podsPerReplica"]),
                    f"{m['acceleratorsPerPod']} {spec.gpu_resource}",
                    f"tp {m['tensorParallel']} x pp {m['pipelineParallel']}",
                ]
            ),
            topology_words(m["topology"]),
            placement_words(m["placement"]).replace("replica slots", "slice slots")
            if spec.models[name].disaggregated
            else placement_words(m["placement"]),
        ]
        for name, m in sorted(data["models"].items(), key=lambda item: list(spec.models).index(item[0]))
    ]
    lines += _table(
        [
            "model",
            "kind",
            "tenant/namespace",
            "queue",
            "priority",
            "replicas x pods",
            f"{words}/pod",
            "parallelism",
            "topology",
            "placement",
        ],
        rows,
    )
    endpoints = rendered.outputs.get("endpoints") or {}
    if endpoints:
        lines += ["", "Endpoints (OpenAI-compatible, inside the cluster):", ""]
        lines += [f"- `{name}`: {url}" for name, url in sorted(endpoints.items())]
    lines.append("")

    lines += _slices(spec, words)
    lines += _pools(data.get("pools") or {}, words)
    if spec.topology is not None:
        top = len(spec.topology.tiers)
        lines += [
            "## Topology",
            "",
            (
                "Tiers (1 = closest): "
                + ", ".join(f"{i} `{label}`" for i, label in enumerate(spec.topology.tiers, start=1))
                + f"; HyperNodes: {spec.topology.hyper_nodes}."
                if spec.topology.tiers
                else "No network tiers (no `topology`): each pool's nodes are counted as one domain."
            ),
            "",
        ]
        if spec.topology.tiers:
            lines += [_hypernode_names(spec), ""]
        rows = [
            [
                name,
                "pool" if d["tier"] > top else str(d["tier"]),
                d["parent"] or "-",
                str(d["nodes"]),
                str(d["accelerators"]),
                str(d["hard"]),
                str(d["soft"]),
                d["status"],
            ]
            for name, d in data["domains"].items()
        ]
        lines += _table(
            ["domain", "tier", "parent", "nodes", words, f"hard {words} planned", f"soft {words} planned", "status"],
            rows,
        )
        lines.append("")

    imports = [entry for entry in rendered.index if entry.get("import")]
    if imports:
        lines += [
            "## Adopted objects",
            "",
            "Existing objects the stack takes over instead of creating (`adopt`); `volcano-platform preflight` "
            "shows what `pulumi up` will update in each after importing it:",
            "",
        ]
        lines += [f"- `{entry['import']}` ({entry['type'].rsplit(':', 1)[-1]}): {entry['file']}" for entry in imports]
        lines.append("")

    lines += _gateway(spec)
    lines += _observability(spec, rendered)

    lines += ["## Images", "", "Every image the stack pulls is listed in [images.txt](images.txt), for mirroring:", ""]
    lines += [f"- `{image}`" for image in stack_images(spec)]
    lines.append("")

    lines += ["## Warnings", ""]
    lines += [fence("\n".join(str(w) for w in spec.warnings))] if spec.warnings else ["None."]
    return "\n".join(lines) + "\n"
