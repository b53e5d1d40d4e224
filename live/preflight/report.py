"""A preflight report: findings (errors and warnings, each with its fix), notes and the queues now,
as Markdown or JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from config.errors import one_line
from offline.markdown import code

Severity = Literal["error", "warning"]

SHOWN = 12
"""How many details of a finding the Markdown report lists before it says how many more there are."""
SCHEMA_VERSION = 1
"""Version of the JSON report (`schema/preflight.schema.json`)."""


@dataclass(frozen=True)
class Finding:
    check: str
    """Short id of the check, e.g. `nodes-missing`."""
    severity: Severity
    subject: str
    message: str
    fix: str = ""
    details: tuple[str, ...] = ()


@dataclass
class Report:
    stack: str
    source: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was checked and found in order (no action needed)."""
    queues: list[dict[str, Any]] = field(default_factory=list)
    """Allocation per queue and resource, for the capacity view."""

    def add(self, *findings: Finding) -> None:
        self.findings.extend(findings)


def listed(names: list[str]) -> tuple[str, ...]:
    """Every name: the JSON report holds them all; the Markdown report shows the first `SHOWN`
    and says how many more there are."""
    return tuple(names)


def object_name(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _detail(text: str) -> str:
    """Details as code (names and values from the cluster cannot format the report)."""
    return code(text)


def markdown(report: Report) -> str:
    errors = [f for f in report.findings if f.severity == "error"]
    warnings = [f for f in report.findings if f.severity == "warning"]
    lines = [
        f"## Preflight of stack {code(report.stack)}",
        "",
        f"Read from {one_line(report.source, keep_backticks=True)}: "
        f"{len(errors)} error(s), {len(warnings)} warning(s).",
        "",
    ]
    for title, found in (("Errors", errors), ("Warnings", warnings)):
        if not found:
            continue
        lines += [f"### {title}", ""]
        for finding in found:
            lines.append(
                f"- **{code(finding.subject)}** ({finding.check}): {one_line(finding.message, keep_backticks=True)}"
            )
            if finding.fix:
                lines.append(f"  - fix: {one_line(finding.fix, keep_backticks=True)}")
            lines += [f"  - {_detail(detail)}" for detail in finding.details[:SHOWN]]
            if len(finding.details) > SHOWN:
                lines.append(f"  - ... and {len(finding.details) - SHOWN} more (all of them in `--json`)")
        lines.append("")
    if report.notes:
        lines += ["### Found", ""] + [f"- {one_line(note, keep_backticks=True)}" for note in report.notes] + [""]
    if report.queues:
        lines += ["### Queues now", "", "| queue | resource | allocated | capability |", "|---|---|---|---|"]
        lines += [
            f"| {code(q['queue'])} | {code(q['resource'])} | {q['allocated']} | {q['capability']} |"
            for q in report.queues
        ]
        lines.append("")
    if not report.findings:
        lines += ["Nothing found: the stack meets the cluster cleanly.", ""]
    return "\n".join(lines)


def as_json(report: Report) -> str:
    """The report as data (`schema/preflight.schema.json`): every detail, no Markdown."""
    data = {"schemaVersion": SCHEMA_VERSION, **asdict(report)}
    data["findings"] = [{**f, "details": list(f["details"])} for f in data["findings"]]
    return json.dumps(data, indent=2) + "\n"
