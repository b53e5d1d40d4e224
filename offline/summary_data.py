"""`summary.json`: what a render does to the platform, as data a reviewer's tools can compare.

`summary.md` describes one render for a person; `summary.json` holds the same facts (models and
their size and placement, tenant quotas, demand per topology domain, warnings) in a form that two
renders can be compared by, so a pull request leads with what it changes on the platform
(`platform_changes`) before any manifest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from config.errors import one_line
from config.sections.models import ModelConfig
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from offline.demand import domain_demand
from offline.markdown import code, fence
from offline.render_folder import RenderFolderError, read_json_mapping

SUMMARY_DATA_FILE = "summary.json"
LEGACY_SUMMARY_DATA_FILE = "plan.json"
"""What renders made before the rename called the same file (a pull request's base may be one)."""


def replicas_text(cfg: ModelConfig) -> str:
    """`2`, or `1..8` under an autoscaler."""
    scaling = cfg.autoscaling
    return str(cfg.replicas) if scaling is None else f"{scaling.min_replicas}..{scaling.max_replicas}"


def placement_text(spec: PlatformSpec, model: ModelSpec) -> str:
    placement = spec.placements.get(model.name)
    if placement is None:
        return "not checked"
    where = "cluster" if placement.tier is None else f"tier {placement.tier}"
    return f"fits {where} ({placement.replicas_that_fit} replica slots)"


def build_summary_data(spec: PlatformSpec) -> dict[str, Any]:
    words = spec.accelerator.words
    models = {
        m.name: {
            "kind": "LeaderWorkerSet" if m.multi_node else "Deployment",
            "tenant": m.tenant,
            "replicas": replicas_text(m.config),
            "pods per replica": m.gang.pods,
            f"{words} per pod": m.gpus_per_pod,
            "topology": "-"
            if m.config.topology is None
            else m.config.topology.mode + (f" <= tier {m.highest_tier}" if m.highest_tier else ""),
            "placement": placement_text(spec, m),
        }
        for m in sorted(spec.models.values(), key=lambda m: m.name)
    }
    tenants = {
        t.name: {
            "queue": t.queue_name,
            "weight": t.config.queue.weight,
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
                words: domain.gpus,
                "hard": need.hard,
                "soft": need.soft,
                "status": need.status,
            }
    return {"models": models, "tenants": tenants, "domains": domains, "warnings": [str(w) for w in spec.warnings]}


def write_summary_data(spec: PlatformSpec, out: Path) -> None:
    (out / SUMMARY_DATA_FILE).write_text(json.dumps(build_summary_data(spec), indent=1, sort_keys=True) + "\n")


def read_summary_data(directory: Path) -> dict[str, Any] | None:
    for name in (SUMMARY_DATA_FILE, LEGACY_SUMMARY_DATA_FILE):
        path = directory / name
        if path.is_file():
            data = read_json_mapping(path, {"models": dict, "tenants": dict, "domains": dict, "warnings": list})
            for section in ("models", "tenants", "domains"):
                for name, entry in data[section].items():
                    if not isinstance(entry, dict):
                        raise RenderFolderError(f"{path}: `{section}.{name}` must be a JSON object")
            data["warnings"] = [str(w) for w in data["warnings"]]
            return data
    return None


def _cell(value: Any) -> str:
    text = (", ".join(f"{k}={v}" for k, v in value.items()) or "-") if isinstance(value, dict) else str(value)
    return one_line(text).replace("|", "\\|")


def _changes(
    title: str, old: dict[str, Any], new: dict[str, Any], describe: Callable[[dict[str, Any]], str]
) -> list[str]:
    """A table of the entries added, removed or changed between two plans' sections."""
    rows: list[str] = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if before is None:
            rows.append(f"| {code(name)} | added | {_cell(describe(after))} |")  # type: ignore[arg-type]
        elif after is None:
            rows.append(f"| {code(name)} | removed | {_cell(describe(before))} |")
        else:
            changed = [
                f"{key}: {_cell(before.get(key, '-'))} → {_cell(after.get(key, '-'))}"
                for key in dict.fromkeys([*before, *after])
                if before.get(key) != after.get(key)
            ]
            rows.append(f"| {code(name)} | changed | {'; '.join(changed)} |")
    if not rows:
        return []
    return [f"**{title}**", "", "| | | before → after |", "|---|---|---|", *rows, ""]


def platform_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """Markdown: models added, removed or resized; tenant quota changes; placement and demand
    changes per topology domain; warnings that are new. Empty when nothing changed."""
    if old is None or new is None:
        side = "base" if old is None else "changed"
        return (
            f"_The {side} render has no `{SUMMARY_DATA_FILE}`, so platform changes cannot be listed; see the "
            "manifests._\n"
        )
    lines: list[str] = []
    lines += _changes(
        "Models",
        old["models"],
        new["models"],
        lambda m: f"{m.get('kind')}, {m.get('replicas')} × {m.get('pods per replica')} pods, {m.get('placement')}",
    )
    lines += _changes(
        "Tenant quotas", old["tenants"], new["tenants"], lambda t: f"queue {t.get('queue')}, weight {t.get('weight')}"
    )
    lines += _changes(
        "Placement per domain",
        old["domains"],
        new["domains"],
        lambda d: f"tier {d.get('tier')}, {d.get('hard')} hard + {d.get('soft')} soft planned, {d.get('status')}",
    )
    added = [w for w in new["warnings"] if w not in old["warnings"]]
    if added:
        lines += ["**New warnings**", "", fence("\n".join(added)), ""]
    return "\n".join(lines)
