"""`check`: config validation, schema validation of every object, chart values and the policy
pack, over one offline render. Findings are errors (exit 1) or warnings (printed only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import yaml

from offline.render import StackRender
from offline.schemas import upstream_dir, validate_objects
from policy.runner import run_policies

# Chart values sections the program writes, checked key by key against upstream values.yaml.
CHECKED_VALUE_SECTIONS = {"volcano": ("basic", "custom"), "lws": None}


@dataclass
class CheckReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@cache
def upstream_values(chart: str) -> dict[str, Any] | None:
    root = upstream_dir()
    if root is None or not (root / chart / "values.yaml").exists():
        return None
    return yaml.safe_load((root / chart / "values.yaml").read_text())


def unknown_value_keys(chart: str, values: dict[str, Any]) -> list[str]:
    """Keys the program sets that the upstream chart does not define (typos, renamed keys)."""
    upstream = upstream_values(chart)
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
    version = result.spec.config.cluster.kubernetes_version
    schema = validate_objects(result.rendered.objects, version)
    report.errors += [str(issue) for issue in schema.issues]
    report.notes.append(f"{schema.checked} object(s) validated against Kubernetes {version} and the upstream CRDs")
    report.notes += [f"skipped {reason}" for reason in schema.skipped]
    for release in result.rendered.releases:
        chart = release.data["release"]
        if chart not in CHECKED_VALUE_SECTIONS:
            continue
        if upstream_values(chart) is None:
            report.notes.append(f"skipped chart values of `{chart}`: upstream values.yaml not found")
            continue
        for key in unknown_value_keys(chart, release.data["values"]):
            report.warnings.append(f"{release.file}: values key `{key}` is not in the upstream chart's values.yaml")
    for violation in run_policies(result.rendered):
        (report.errors if violation.level == "mandatory" else report.warnings).append(str(violation))
    return report
