"""`summary.json`: what a render does to the platform, as data a reviewer's tools can compare.

`summary.md` describes one render for a person; `summary.json` holds the same facts (models and
their size and placement, tenant quotas, demand per topology domain, warnings) in a form that two
renders can be compared by, so a pull request leads with what it changes on the platform
(`offline.review`) before any manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from config.sections.models import ModelConfig
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from offline.demand import domain_demand
from offline.render_folder import RenderFolderError, read_json_mapping

SUMMARY_DATA_FILE = "summary.json"
LEGACY_SUMMARY_DATA_FILE = "plan.json"
"""What renders made before the rename called the same file (a pull request's base may be one)."""


SUMMARY_SCHEMA_VERSION = 2
"""Version of `summary.json`; `schema/summary.schema.json` describes it. Version 1 (display
strings: `"pods per replica"`, `"2..16"`, placement as prose) is still read from base renders."""


def _hostnames(spec: PlatformSpec, tenant: str) -> tuple[str, ...]:
    """The tenant's hostnames on the gateway: where its requests come in, which a reviewer looks for."""
    return tuple(spec.gateway.hostnames.get(tenant, ())) if spec.gateway is not None else ()


def replicas_text(cfg: ModelConfig) -> str:
    """`2`, or `1..8` under an autoscaler."""
    scaling = cfg.autoscaling
    return str(cfg.replicas) if scaling is None else f"{scaling.min_replicas}..{scaling.max_replicas}"


def placement_text(spec: PlatformSpec, model: ModelSpec) -> str:
    return placement_words(placement_data(spec, model))


def placement_data(spec: PlatformSpec, model: ModelSpec) -> dict[str, Any] | None:
    placement = spec.placements.get(model.name)
    if placement is None:
        return None
    data: dict[str, Any] = {
        "tier": placement.tier,
        "replicaSlots": placement.replicas_that_fit,
        "unplaced": placement.unplaced,
        "unplacedAtPeak": placement.unplaced_peak,
    }
    if model.pools is not None:
        data["pools"] = list(model.pools)
    return data


def placement_words(placement: dict[str, Any] | None) -> str:
    if placement is None:
        return "not checked"
    pools = placement.get("pools")
    anywhere = "cluster" if not pools else ("pool " if len(pools) == 1 else "pools ") + ", ".join(map(str, pools))
    where = anywhere if placement.get("tier") is None else f"tier {placement['tier']}"
    return f"fits {where} ({placement.get('replicaSlots')} replica slots)"


def replicas_words(replicas: dict[str, Any]) -> str:
    if replicas.get("autoscaled"):
        return f"{replicas.get('min')}..{replicas.get('max')}"
    return str(replicas.get("count"))


def topology_words(topology: dict[str, Any] | None) -> str:
    if not topology:
        return "-"
    return str(topology.get("mode")) + (f" <= tier {topology['highestTier']}" if topology.get("highestTier") else "")


def _replicas(cfg: ModelConfig) -> dict[str, Any]:
    scaling = cfg.autoscaling
    if scaling is None:
        return {"autoscaled": False, "count": cfg.replicas}
    return {
        "autoscaled": True,
        "min": scaling.min_replicas,
        "max": scaling.max_replicas,
        "start": cfg.replicas,
        "engine": scaling.engine,
        "metric": scaling.metric,
        "target": scaling.target,
    }


def build_summary_data(spec: PlatformSpec) -> dict[str, Any]:
    """Everything as data: numbers as numbers, quantities as the Kubernetes quantity text."""
    models = {
        m.name: {
            "kind": "LeaderWorkerSet" if m.config.uses_lws else "Deployment",
            "tenant": m.tenant,
            "namespace": m.namespace,
            "queue": m.queue,
            "priorityClass": m.config.priority_class,
            "replicas": _replicas(m.config),
            "podsPerReplica": m.gang.pods,
            "acceleratorsPerPod": m.gpus_per_pod,
            "tensorParallel": m.config.tensor_parallel,
            "pipelineParallel": m.config.pipeline_parallel,
            "topology": None
            if m.config.topology is None
            else {"mode": m.config.topology.mode, "highestTier": m.highest_tier},
            "placement": placement_data(spec, m),
        }
        for m in sorted(spec.models.values(), key=lambda m: m.name)
    }
    tenants = {
        t.name: {
            "queue": t.queue_name,
            "parent": t.parent_queue,
            "namespaces": list(t.namespaces),
            **({"hostnames": list(hosts)} if (hosts := _hostnames(spec, t.name)) else {}),
            "weight": t.config.queue.weight,
            "reclaimable": t.config.queue.reclaimable,
            **{
                key: {k: str(v) for k, v in getattr(t.config.queue, key).items()}
                for key in ("capability", "deserved", "guarantee")
            },
        }
        for t in sorted(spec.tenants.values(), key=lambda t: t.name)
    }
    domains: dict[str, Any] = {}
    if spec.topology is not None:
        demand = domain_demand(spec)
        for name, domain in spec.topology.domains.items():
            need = demand[name]
            domains[name] = {
                "tier": domain.tier,
                "parent": domain.parent,
                "nodes": domain.node_count,
                "accelerators": domain.gpus,
                "hard": need.hard,
                "soft": need.soft,
                "status": need.status,
            }
            if domain.pool is not None:
                domains[name]["pool"] = domain.pool
    return {
        "schemaVersion": SUMMARY_SCHEMA_VERSION,
        "stack": spec.stack,
        "cluster": spec.cluster_name,
        "accelerator": {"resource": spec.gpu_resource, "word": spec.accelerator.word},
        "models": models,
        "tenants": tenants,
        "domains": domains,
        **({"pools": pools_data(spec)} if spec.pools else {}),
        "warnings": [
            {"path": w.path, "message": w.message, "fix": w.fix, "file": w.file or None, "text": str(w)}
            for w in spec.warnings
        ],
    }


def pools_data(spec: PlatformSpec) -> dict[str, Any]:
    """Each pool: how its nodes are found, what they offer, its size and its place on the fabric."""
    out: dict[str, Any] = {}
    for name, pool in spec.pools.items():
        cfg = pool.config
        fabric = None if cfg.topology is None else ("shape" if cfg.topology.shaped else "named")
        out[name] = {
            "selector": dict(cfg.selector),
            "resource": pool.resource,
            "acceleratorsPerNode": pool.gpus_per_node,
            "product": pool.product,
            "type": spec.pool_types[name],
            "nodes": cfg.largest if not cfg.autoscaled else None,
            "minNodes": cfg.min_nodes,
            "maxNodes": cfg.max_nodes,
            "fabric": fabric,
            "models": sorted(m.name for m in spec.models.values() if m.pools is not None and name in m.pools),
        }
    return out


def write_summary_data(spec: PlatformSpec, out: Path) -> None:
    (out / SUMMARY_DATA_FILE).write_text(json.dumps(build_summary_data(spec), indent=1, sort_keys=True) + "\n")


def read_summary_data(directory: Path) -> dict[str, Any] | None:
    for name in (SUMMARY_DATA_FILE, LEGACY_SUMMARY_DATA_FILE):
        path = directory / name
        if path.is_file():
            data = read_json_mapping(path, {"models": dict, "tenants": dict, "domains": dict, "warnings": list})
            for section in ("models", "tenants", "domains"):
                for entry_name, entry in data[section].items():
                    if not isinstance(entry, dict):
                        raise RenderFolderError(f"{path}: `{section}.{entry_name}` must be a JSON object")
            return data if data.get("schemaVersion") == SUMMARY_SCHEMA_VERSION else _from_version_1(data)
    return None


def _from_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 summary (display strings) in the shape platform changes compare."""

    def replicas(text: Any) -> dict[str, Any]:
        low, _, high = str(text).partition("..")
        if high:
            return {"autoscaled": True, "min": _int(low), "max": _int(high), "start": None}
        return {"autoscaled": False, "count": _int(low)}

    models = {}
    for name, m in data["models"].items():
        models[name] = {
            "kind": m.get("kind"),
            "tenant": m.get("tenant"),
            "replicas": replicas(m.get("replicas")),
            "podsPerReplica": m.get("pods per replica"),
            "placementText": m.get("placement"),
        }
    return {
        **data,
        "models": models,
        "warnings": [{"text": str(w)} for w in data["warnings"]],
        "schemaVersion": 1,
    }


def _int(text: str) -> int | str:
    return int(text) if text.strip().isdigit() else text
