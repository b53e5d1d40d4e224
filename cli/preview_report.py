"""The live preview of a pull request as a reviewer reads it: what changes first, then the rest.

`pulumi preview --refresh --diff` prints every refreshed object; at a thousand nodes that is
megabytes with nothing to change, and a comment that keeps only its end can lose the one change
that matters. The preview's JSON (`pulumi preview --json`: the steps, each with its operation, URN,
old and new state and `detailedDiff`, and the diagnostics; pulumi pkg/backend/display/json.go)
says the same compactly: a count per operation, then each changed object with the fields that
change (old → new), then the errors and warnings. A preview that failed on a field another
manager holds (a server-side apply conflict) is taken again with the provider's force
(`PULUMI_K8S_ENABLE_PATCH_FORCE`, by .github/scripts/pulumi-run.sh) so the pull request is not red
for drift that is not its own; the report then says so first, with the fix.

Usage: python -m cli.preview_report <preview.json> [--conflicts-from <failed.json>] [--conflict]
(`--conflict`: exit 0 when the preview failed on a field conflict, 1 when not; prints nothing).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

CHANGED_OPS = ("create", "update", "replace", "create-replacement", "delete-replaced", "delete", "import")
ROW_LIMIT = 300
"""Rows kept in the comment; the job log has the whole preview."""
PATH_LIMIT = 8
VALUE_LIMIT = 100
DIAGNOSTIC_COUNT = 40
DIAGNOSTIC_LIMIT = 1500
CONFLICT = re.compile(r"field conflict|Apply failed with \d+ conflicts?|conflicts? with \"", re.IGNORECASE)
MANAGER = re.compile(r'conflicts? with "([^"]+)"')
TAKEN_OVER = ("kubectl", "before-first-apply")
"""Managers whose fields the provider takes over in an update, never in a preview (pulumi-kubernetes
provider/pkg/await/await.go, `fixCSAFieldManagers`; `kubectl patch` and `kubectl edit` write as
`kubectl-patch` and `kubectl-edit`, which `up --refresh` sets back in tests/e2e/test_day_two.py)."""
"""The provider's and the API server's words for a server-side apply conflict (pulumi-kubernetes
provider/pkg/provider/provider.go; k8s.io/apimachinery .../fieldmanager, `Apply failed with N
conflict(s)`)."""
OP_SIGNS = {
    "create": "+ create",
    "update": "~ update",
    "replace": "+- replace",
    "create-replacement": "+- replace",
    "delete": "- delete",
    "import": "= import",
}


def read_digest(path: Path) -> dict[str, Any]:
    """The preview's JSON; an empty or broken file (the CLI stopped before writing it) is no steps."""
    try:
        digest = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return digest if isinstance(digest, dict) else {}


def failed_on_conflict(digest: dict[str, Any]) -> bool:
    return any(CONFLICT.search(message) for message in _errors(digest))


def conflict_managers(digest: dict[str, Any]) -> list[str]:
    """The field managers a failed preview's conflicts name, in order."""
    found = [name for message in _errors(digest) for name in MANAGER.findall(message)]
    return list(dict.fromkeys(found))


def _errors(digest: dict[str, Any]) -> list[str]:
    return [str(d.get("message", "")) for d in digest.get("diagnostics") or [] if d.get("severity") == "error"]


def _drift_note(managers: list[str]) -> list[str]:
    """What the report says first when the preview was taken again with force."""
    named = ", ".join(f"`{m}`" for m in managers) or "another manager"
    if managers and all(m.startswith(TAKEN_OVER) for m in managers):
        return [
            f"DRIFT: fields changed on the cluster with kubectl ({named}) conflict with the stack's, so the",
            "preview was taken again with the provider's force. `pulumi up --refresh` sets them back (the",
            "provider takes fields over from kubectl in an update); the changes below include it. This pull",
            'request did not cause it (docs/operations.md, "Drift").',
        ]
    return [
        f"DRIFT THE STACK DOES NOT OWN: fields held on the cluster by {named} conflict with the stack's",
        "(the preflight report names each field and object), so the preview was taken again with the",
        "provider's force. `pulumi up` fails on the same fields until they are given back or the stack",
        'sets `cluster.forceFieldOwnership: true` (docs/operations.md, "Drift"). This pull request did',
        "not cause it.",
    ]


def _value_at(state: dict[str, Any] | None, path: str, side: str) -> Any:
    """A property path of `detailedDiff` (`spec.template.spec.containers[0].image`) in a state's
    `inputs` or `outputs`."""
    node: Any = (state or {}).get(side)
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if index:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def _object(step: dict[str, Any]) -> str:
    """`<kind> <namespace>/<name>` of a step's manifest, else the URN's type and name."""
    state = step.get("newState") or step.get("oldState") or {}
    inputs = state.get("inputs") or {}
    found = inputs.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    urn = str(step.get("urn", ""))
    parts = urn.split("::")
    kind = inputs.get("kind") or (parts[-2].split("$")[-1] if len(parts) > 2 else "resource")
    name = metadata.get("name")
    if name is None:
        return f"{kind} {parts[-1]}"
    return f"{kind} {metadata['namespace']}/{name}" if metadata.get("namespace") else f"{kind} {name}"


def _was(step: dict[str, Any], path: str) -> Any:
    """A field's value before the change: as the cluster has it (the refreshed outputs, so drift
    shows as live → desired), else as the stack last set it."""
    old = step.get("oldState")
    live = _value_at(old, path, "outputs")
    return live if live is not None else _value_at(old, path, "inputs")


def _changes(step: dict[str, Any]) -> list[str]:
    if step.get("op") in ("create", "delete", "import"):
        return []
    diff = step.get("detailedDiff") or {}
    paths = sorted(diff) or [str(reason) for reason in step.get("diffReasons") or []]
    shown = [
        f"{path}: {_shown(_was(step, path))} → {_shown(_value_at(step.get('newState'), path, 'inputs'))}"
        for path in paths[:PATH_LIMIT]
    ]
    if len(paths) > PATH_LIMIT:
        shown.append(f"and {len(paths) - PATH_LIMIT} more fields")
    return shown


def report(digest: dict[str, Any], conflicts: dict[str, Any] | None = None) -> str:
    """The preview as plain text, what changes first (pure); the comment fences it
    (.github/scripts/fence.sh), since names and messages come from the cluster and the branch.
    `conflicts`: the preview that failed on field conflicts, when `digest` was taken with force."""
    steps = [s for s in digest.get("steps") or [] if s.get("op") in CHANGED_OPS and s.get("op") != "delete-replaced"]
    summary = digest.get("changeSummary") or {}
    lines = []
    if conflicts is not None:
        lines += [*_drift_note(conflict_managers(conflicts)), ""]
    counts = [f"{summary[op]} to {op}" for op in ("create", "update", "replace", "delete") if summary.get(op)]
    lines.append(f"{', '.join(counts) if counts else 'No changes'}; {summary.get('same', 0)} unchanged.")
    for step in steps[:ROW_LIMIT]:
        lines.append(f"{OP_SIGNS[step['op']]:<11} {_object(step)}")
        lines += [f"    {change}" for change in _changes(step)]
    if len(steps) > ROW_LIMIT:
        lines.append(f"... and {len(steps) - ROW_LIMIT} more changed objects (the job log has them all).")
    notes = [d for d in digest.get("diagnostics") or [] if d.get("severity") in ("error", "warning")]
    if notes:
        lines += ["", "Errors and warnings:"]
        for note in notes[:DIAGNOSTIC_COUNT]:
            message = " ".join(str(note.get("message", "")).split())
            if len(message) > DIAGNOSTIC_LIMIT:
                message = message[:DIAGNOSTIC_LIMIT] + "…"
            where = str(note.get("urn", "")).split("::")[-1] or "stack"
            lines.append(f"{note['severity']} {where}: {message}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.preview_report", description=__doc__)
    parser.add_argument("digest", type=Path)
    parser.add_argument("--conflicts-from", type=Path, help="the failed preview's JSON, when this one was forced")
    parser.add_argument("--conflict", action="store_true")
    args = parser.parse_args(argv)
    digest = read_digest(args.digest)
    if args.conflict:
        return 0 if failed_on_conflict(digest) else 1
    sys.stdout.write(report(digest, read_digest(args.conflicts_from) if args.conflicts_from else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
