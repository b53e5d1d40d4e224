"""`check`: config validation, schema validation of every object, chart values and the policy
pack, over one offline render. Findings are errors (exit 1) or warnings (printed only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from config.spec.placement import shortages
from config.stack_file.yaml12 import load_yaml_text
from config.upstream.vendored import fetch_command, vendored_dir
from offline.metric_check import check_queries
from offline.policy_runner import run_policies
from offline.render import StackRender
from offline.schemas import schema_dirs, validate_objects, validate_project_file

# Chart values sections the program writes, checked key by key against upstream values.yaml.
CHECKED_VALUE_SECTIONS = {"volcano": ("basic", "custom"), "lws": None}


@dataclass
class CheckReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def upstream_values(chart: str, version: str) -> dict[str, Any] | None:
    """The vendored `values.yaml` of `chart` at `version`, if vendored."""
    directory = vendored_dir(chart, version)
    if directory is None or not (directory / "values.yaml").exists():
        return None
    return _values_file(directory / "values.yaml")


@cache
def _values_file(path: Path) -> dict[str, Any]:
    return load_yaml_text(path.read_text()) or {}


def unknown_value_keys(chart: str, version: str, values: dict[str, Any]) -> list[str]:
    """Keys the program sets that the upstream chart does not define (typos, renamed keys)."""
    upstream = upstream_values(chart, version)
    if upstream is None:
        return []
    sections = CHECKED_VALUE_SECTIONS.get(chart)
    unknown: list[str] = []
    if sections is None:
        unknown += [k for k in values if k not in upstream]
    else:
        for section in sections:
            for key in values.get(section, {}) or {}:
                if key not in (upstream.get(section) or {}):
                    unknown.append(f"{section}.{key}")
        unknown += [k for k in values if k not in sections]
    return unknown


def check_render(result: StackRender) -> CheckReport:
    report = CheckReport()
    report.warnings += [str(w) for w in result.spec.warnings]
    for name in shortages(result.spec.placements.values()):
        placement = result.spec.placements[name]
        report.errors.append(
            f"models.{name}: {placement.unplaced} required replica(s) find no room in any arrangement of the stack's "
            "models (the warning above says where; summary.md and topology.svg show the short domains)"
        )
    version = result.spec.config.cluster.kubernetes_version
    report.errors += [str(issue) for issue in validate_project_file(result.project_dir / "Pulumi.yaml")]
    schema = validate_objects(result.rendered.objects, version, schema_dirs(result.spec))
    report.errors += [str(issue) for issue in schema.issues]
    report.notes.append(
        f"{schema.checked} object(s) validated against Kubernetes {version} and the vendored upstream CRDs"
    )
    query_problems, queries = check_queries(result.spec, result.rendered)
    report.errors += query_problems
    if queries:
        report.notes.append(f"{queries} PromQL queries parsed, every series checked against the metrics catalog")
    for release in result.rendered.releases:
        chart = release.data["release"]
        if chart not in CHECKED_VALUE_SECTIONS:
            continue
        chart_version = str(release.data["version"])
        if upstream_values(chart, chart_version) is None:
            report.errors.append(
                f"{release.file}: no vendored values.yaml of chart `{chart}` {chart_version}; "
                f"add it with `{fetch_command(chart, chart_version)}`"
            )
            continue
        for key in unknown_value_keys(chart, chart_version, release.data["values"]):
            report.warnings.append(f"{release.file}: values key `{key}` is not in the upstream chart's values.yaml")
    for violation in run_policies(result.rendered):
        (report.errors if violation.level == "mandatory" else report.warnings).append(str(violation))
    return report
