"""`diff`: what a change does to a stack, object by object, before anything is applied.

Objects are matched by URN (the identity Pulumi uses), so a change that gives a resource a new
name or namespace, or touches a field that cannot be updated in place, is reported as a
*replacement*, the way `pulumi preview` would show it, not as an innocent update.
"""

from __future__ import annotations

import difflib
import operator
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from offline.summary_data import platform_changes, read_summary_data


class RevisionError(Exception):
    """The base revision cannot be read from git, or its program cannot render the stack."""


# Fields the Kubernetes API cannot update in place; pulumi-kubernetes replaces the object.
IMMUTABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec.selector",),
    "StatefulSet": ("spec.selector", "spec.serviceName", "spec.volumeClaimTemplates"),
    "Service": ("spec.clusterIP",),
    "Secret": ("type",),
    "PersistentVolumeClaim": ("spec",),
    "PriorityClass": ("value", "preemptionPolicy"),
}


@dataclass
class Entry:
    urn: str
    file: str | None
    text: str | None
    options: dict[str, Any]
    aliased: bool = False
    """The resource or one of its parents declares an alias (an earlier identity)."""


@dataclass(frozen=True)
class ObjectDiff:
    file: str
    change: str
    """`added`, `changed`, `replaced: <why>`, `removed`..."""
    lines: list[str]
    """Unified diff of the object's manifest."""


@dataclass
class DiffResult:
    added: list[str] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)
    """Added to the stack by taking over an existing object (`adopt`), not by creating it."""
    changed: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    provider_replaced: str | None = None
    """Why the Kubernetes provider is replaced (then every resource is), if it is."""

    @property
    def empty(self) -> bool:
        return not (
            self.added or self.imported or self.changed or self.replaced or self.removed or self.provider_replaced
        )


# Provider inputs that give it a new identity: pulumi-kubernetes replaces the provider, and every
# resource it manages, when the cluster identifier changes.
PROVIDER_IDENTITY = ("clusterIdentifier",)


def load_providers(directory: Path) -> dict[str, dict[str, Any]]:
    """Provider URN -> its recorded inputs."""
    index_file = directory / "resources.yaml"
    if not index_file.exists():
        return {}
    items = yaml.safe_load(index_file.read_text()) or []
    return {item["urn"]: item.get("inputs") or {} for item in items if item["type"].startswith("pulumi:providers:")}


def provider_replacement(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> str | None:
    """Why the stack's providers are replaced between two renders, or None."""
    if not old or not new:
        return None
    if set(old) != set(new):
        return "the provider resource changes identity (" + ", ".join(sorted(set(old) ^ set(new))) + ")"
    for urn, inputs in new.items():
        for key in PROVIDER_IDENTITY:
            if old[urn].get(key) != inputs.get(key):
                return f"`{key}` changes from {old[urn].get(key)!r} to {inputs.get(key)!r}"
    return None


def load_render(directory: Path) -> dict[str, Entry]:
    """URN -> entry for every file-backed resource of a render directory."""
    index_file = directory / "resources.yaml"
    entries: dict[str, Entry] = {}
    if index_file.exists():
        items = {item["urn"]: item for item in yaml.safe_load(index_file.read_text()) or []}

        def aliased(urn: str | None) -> bool:
            while urn in items:
                if items[urn].get("aliases"):
                    return True
                urn = items[urn].get("parent")
            return False

        for urn, item in items.items():
            file = item.get("file")
            if file:
                path = directory / file
                text = path.read_text() if path.exists() else None
                entries[urn] = Entry(urn, file, text, item, aliased(urn))
        return entries
    # A directory without an index (e.g. hand-made): match files by path.
    for path in sorted(directory.rglob("*.yaml")):
        rel = str(path.relative_to(directory))
        entries[rel] = Entry(rel, rel, path.read_text(), {})
    return entries


def _match_moves(old: dict[str, Entry], new: dict[str, Entry]) -> dict[str, str]:
    """New URN -> old URN for objects that kept their identity (file) but changed URN."""
    old_by_file = {e.file: urn for urn, e in old.items() if urn not in new}
    return {urn: old_by_file[e.file] for urn, e in new.items() if urn not in old and e.file in old_by_file}


def dotted_get(data: Any, dotted: str) -> Any:
    """The value at a dotted path (`spec.selector`), None where the path ends early."""
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _replacement_reason(old: Entry, new: Entry) -> str | None:
    if old.file != new.file:
        return f"identity changes ({old.file} -> {new.file})"
    if old.urn != new.urn and not new.aliased:
        return (
            "its URN changes without an alias (the new object would be created while the old one still holds the name)"
        )
    before = yaml.safe_load(old.text or "") or {}
    after = yaml.safe_load(new.text or "") or {}
    fixed = fixed_field_changes(before, after, new.options.get("replaceOnChanges", []))
    return f"`{fixed[0]}` cannot change in place" if fixed else None


def fixed_field_changes(
    before: dict[str, Any],
    after: dict[str, Any],
    replace_on_changes: Iterable[str] = (),
    same: Callable[[Any, Any], bool] = operator.eq,
) -> list[str]:
    """The fields that cannot change in place (the kind's immutable ones and the resource's
    `replaceOnChanges`) whose values differ between two versions of an object: any of them means
    a replacement."""
    fields = (*IMMUTABLE_FIELDS.get(str(after.get("kind")), ()), *replace_on_changes)
    return [dotted for dotted in fields if not same(dotted_get(before, dotted), dotted_get(after, dotted))]


def compare(
    old: dict[str, Entry], new: dict[str, Entry], provider_replaced: str | None = None
) -> tuple[DiffResult, list[ObjectDiff]]:
    """Summary of the differences and a unified diff per changed file. With `provider_replaced`,
    every resource in both renders is replaced, changed or not."""
    result = DiffResult(provider_replaced=provider_replaced)
    hunks: list[ObjectDiff] = []
    moves = _match_moves(old, new)
    old = {**{k: v for k, v in old.items() if k not in moves.values()}, **{n: old[o] for n, o in moves.items()}}
    for urn in sorted(set(old) | set(new), key=lambda u: (new.get(u) or old[u]).file or u):
        before, after = old.get(urn), new.get(urn)
        if before is None and after is not None:
            imported = bool(after.options.get("import"))
            (result.imported if imported else result.added).append(after.file or urn)
            hunks.append(ObjectDiff(after.file or urn, "imported" if imported else "added", _unified(None, after)))
        elif after is None and before is not None:
            kept = " (kept on the cluster: retainOnDelete)" if before.options.get("retainOnDelete") else ""
            result.removed.append((before.file or urn, kept))
            hunks.append(ObjectDiff(before.file or urn, "removed" + kept, _unified(before, None)))
        elif before is not None and after is not None and provider_replaced:
            result.replaced.append((after.file or urn, "the Kubernetes provider is replaced"))
            if before.text != after.text:
                hunks.append(ObjectDiff(after.file or urn, "replaced", _unified(before, after)))
        elif (
            before is not None
            and after is not None
            and (
                before.text != after.text
                or before.file != after.file
                or (before.urn != after.urn and not after.aliased)
            )
        ):
            reason = _replacement_reason(before, after)
            if reason:
                result.replaced.append((after.file or urn, reason))
            else:
                result.changed.append(after.file or urn)
            hunks.append(
                ObjectDiff(after.file or urn, f"replaced: {reason}" if reason else "changed", _unified(before, after))
            )
    return result, hunks


def _unified(before: Entry | None, after: Entry | None) -> list[str]:
    old_lines = (before.text or "").splitlines(keepends=True) if before else []
    new_lines = (after.text or "").splitlines(keepends=True) if after else []
    old_name = f"a/{before.file}" if before else "/dev/null"
    new_name = f"b/{after.file}" if after else "/dev/null"
    return list(difflib.unified_diff(old_lines, new_lines, old_name, new_name))


def summary_lines(result: DiffResult, title: str = "") -> list[str]:
    lines = [title] if title else []
    if result.provider_replaced:
        lines.append(
            f"PROVIDER REPLACED: every resource is replaced ({result.provider_replaced}); "
            "see docs/operations.md, moving a stack to a new cluster"
        )
    counts = (
        f"{len(result.added)} added, {len(result.changed)} changed, "
        f"{len(result.replaced)} replaced, {len(result.removed)} removed"
    )
    if result.imported:
        counts += f", {len(result.imported)} imported"
    lines.append(counts if not result.empty else "no changes")
    lines += [f"  + {f}" for f in result.added]
    lines += [
        f"  = {f}: imported (an existing object the stack takes over, then updates in place)" for f in result.imported
    ]
    lines += [f"  ~ {f}" for f in result.changed]
    lines += [f"  +- {f}: replaced, {why}" for f, why in result.replaced]
    lines += [f"  - {f}{kept}" for f, kept in result.removed]
    return lines


def _lines(diff: ObjectDiff) -> str:
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff.lines)


def diff_dirs(old_dir: Path, new_dir: Path) -> tuple[DiffResult, str]:
    result, objects = _compare_dirs(old_dir, new_dir)
    text = "\n".join(summary_lines(result)) + "\n"
    if objects:
        text += "\n" + "".join(_lines(o) for o in objects)
    return result, text


def _compare_dirs(old_dir: Path, new_dir: Path) -> tuple[DiffResult, list[ObjectDiff]]:
    provider = provider_replacement(load_providers(old_dir), load_providers(new_dir))
    return compare(load_render(old_dir), load_render(new_dir), provider)


def diff_markdown(old_dir: Path, new_dir: Path, title: str = "") -> tuple[DiffResult, str]:
    """The diff for a pull request: what the change does to the platform first (models, quotas,
    placement, new warnings, from the two renders' plans), then the objects, each manifest diff
    collapsed under its file name."""
    result, objects = _compare_dirs(old_dir, new_dir)
    lines = [f"### {title}", ""] if title else []
    changes = platform_changes(read_summary_data(old_dir), read_summary_data(new_dir))
    if changes:
        lines += [changes.rstrip(), ""]
    elif not result.empty:
        lines += ["_No change to models, quotas, placement or warnings._", ""]
    counts = summary_lines(result)
    lines += [
        f"**Objects:** {counts[1 if result.provider_replaced else 0]}"
        + (
            " — **the Kubernetes provider is replaced: every resource is replaced**" if result.provider_replaced else ""
        ),
        "",
    ]
    if objects:
        lines += [
            f"<details><summary>the {len(objects)} object(s)</summary>",
            "",
            "```",
            *counts,
            "```",
            "</details>",
            "",
        ]
    for diff in objects:
        lines += [
            f"<details><summary><code>{diff.file}</code> {diff.change}</summary>",
            "",
            "```diff",
            _lines(diff).rstrip("\n"),
            "```",
            "</details>",
            "",
        ]
    return result, "\n".join(lines)


def render_at_revision(project_dir: Path, revision: str, stack: str, out: Path) -> bool:
    """Render `stack` with the program and stack file of a git revision. False when the stack
    did not exist there (everything is then new)."""
    with tempfile.TemporaryDirectory(prefix="vp-base-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(project_dir), "archive", revision], capture_output=True, check=False)
        if archive.returncode != 0:
            raise RevisionError(f"cannot read revision {revision}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        if not (tree / f"Pulumi.{stack}.yaml").exists():
            out.mkdir(parents=True, exist_ok=True)
            return False
        env = {**os.environ, "PYTHONPATH": str(tree)}
        # The base's own command line: `python -m cli`, or `python -m offline` in revisions older than it.
        command = "cli" if (tree / "cli" / "__main__.py").is_file() else "offline"
        proc = subprocess.run(
            [sys.executable, "-m", command, "render", "--stack", stack, "--out", str(out)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RevisionError(f"rendering {stack} at {revision} failed:\n{proc.stderr.strip()}")
        return True
