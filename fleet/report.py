"""What a fleet run did, as a table per stack (wave, gates, resources changed, time) or JSON
(`schema/fleet.schema.json`)."""

from __future__ import annotations

import json
from typing import Any

from fleet.rollout import NOT_STARTED, FleetRun, StackOutcome

SCHEMA_VERSION = 1


def _gates(outcome: StackOutcome) -> str:
    if not outcome.gates:
        return "-"
    marks = {True: "ok", False: "FAILED"}
    return ", ".join(f"{g.gate} {'overridden' if g.overridden else marks[g.passed]}" for g in outcome.gates)


def _changes(outcome: StackOutcome) -> str:
    if outcome.result == NOT_STARTED or (outcome.step == "gates"):
        return "-"
    return ", ".join(f"{n} {op}" for op, n in sorted(outcome.changes.items())) or "none"


def markdown(run: FleetRun) -> str:
    lines = [
        f"## `fleet {run.action}`",
        "",
        "| stack | wave | gates | resources changed | time | result |",
        "|---|---|---|---|---|---|",
    ]
    for o in run.outcomes:
        time = f"{o.seconds:g} s" if o.result != NOT_STARTED else "-"
        lines.append(f"| {o.stack} | {o.wave} | {_gates(o)} | {_changes(o)} | {time} | {o.result} |")
    lines.append("")
    for o in run.outcomes:
        gate = o.failed_gate
        if gate is not None:
            lines.append(
                f"- **{o.stack}**: gate `{gate.gate}` failed: {gate.said}" + (f"; {gate.fix}" if gate.fix else "")
            )
        elif o.error:
            lines.append(f"- **{o.stack}**: `{o.step}` failed: " + " / ".join(o.error.splitlines()[-3:]))
        for g in o.gates:
            if g.overridden:
                lines.append(f"- **{o.stack}**: gate `{g.gate}` failed and was overridden (recorded): {g.said}")
    if run.stopped_by is not None:
        untouched = [o.stack for o in run.outcomes if o.result == NOT_STARTED]
        lines.append(f"- The fleet stopped after the wave of `{run.stopped_by}`; untouched: {', '.join(untouched)}.")
    return "\n".join(lines).rstrip() + "\n"


def as_json(run: FleetRun) -> str:
    document: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "action": run.action,
        "ok": run.ok,
        "stoppedBy": run.stopped_by,
        "overrides": list(run.overrides),
        "stacks": [o.as_json() for o in run.outcomes],
    }
    return json.dumps(document, indent=2) + "\n"


def status_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "## `fleet status`",
        "",
        "| stack | wave | last update | result | ended | resources | message |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [row["stack"], row["wave"], row["kind"] or "never", row["result"] or "-", row["ended"] or "-",
                 str(row["resources"]), (row["message"] or "").replace("|", "/")]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
