"""A preflight report: findings (errors and warnings, each with its fix), notes and the queues now,
as Markdown or JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]

FIRST = 5
"""How many names a finding lists before it says how many more there are."""
FIELDS_SHOWN = 12
"""How many differing fields of one object a finding lists."""


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


def listed(names: list[str], first: int = FIRST) -> tuple[str, ...]:
    shown = tuple(names[:first])
    return (*shown, f"... and {len(names) - first} more") if len(names) > first else shown


def object_name(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _detail(text: str) -> str:
    """Field paths and values read as code; the sentences that summarise them do not."""
    return text if text.startswith("... and ") or " " in text.split(":")[0] else f"`{text}`"


def markdown(report: Report) -> str:
    errors = [f for f in report.findings if f.severity == "error"]
    warnings = [f for f in report.findings if f.severity == "warning"]
    lines = [
        f"## Preflight of stack `{report.stack}`",
        "",
        f"Read from {report.source}: {len(errors)} error(s), {len(warnings)} warning(s).",
        "",
    ]
    for title, found in (("Errors", errors), ("Warnings", warnings)):
        if not found:
            continue
        lines += [f"### {title}", ""]
        for finding in found:
            lines.append(f"- **{finding.subject}** ({finding.check}): {finding.message}")
            if finding.fix:
                lines.append(f"  - fix: {finding.fix}")
            lines += [f"  - {_detail(detail)}" for detail in finding.details]
        lines.append("")
    if report.notes:
        lines += ["### Found", ""] + [f"- {note}" for note in report.notes] + [""]
    if report.queues:
        lines += ["### Queues now", "", "| queue | resource | allocated | capability |", "|---|---|---|---|"]
        lines += [f"| {q['queue']} | {q['resource']} | {q['allocated']} | {q['capability']} |" for q in report.queues]
        lines.append("")
    if not report.findings:
        lines += ["Nothing found: the stack meets the cluster cleanly.", ""]
    return "\n".join(lines)


def as_json(report: Report) -> str:
    return json.dumps(asdict(report), indent=2) + "\n"
