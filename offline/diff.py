"""`diff`: what a change does to a stack, object by object, before anything is applied.

Objects are matched by URN (the identity Pulumi uses), so a change that gives a resource a new
name or namespace, or touches a field that cannot be updated in place, is reported as a
*replacement*, the way `pulumi preview` would show it, not as an innocent update.
"""

from __future__ import annotations

import difflib
import json
import operator
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.errors import one_line
from config.project import PROJECT
from config.stack_file.includes import INCLUDE_KEY
from config.stack_file.yaml12 import StackYamlError, read_yaml
from offline.render_folder import parse_manifest, read_index, read_manifest


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
    provider_updated: list[str] = field(default_factory=list)
    """The provider's settings that change in place (Helm's storage, the context), a line each."""
    before: int = 0
    """Objects in the base render."""

    @property
    def removes_most(self) -> bool:
        """The change removes more than half of a stack's objects: the mark of a stack file that lost
        its config (or of a stack meant to be destroyed, which `pulumi destroy` is for)."""
        return self.before >= 4 and len(self.removed) * 2 > self.before

    @property
    def empty(self) -> bool:
        return not (
            self.added
            or self.imported
            or self.changed
            or self.replaced
            or self.removed
            or self.provider_replaced
            or self.provider_updated
        )


# Provider inputs that give it a new identity: pulumi-kubernetes replaces the provider, and every
# resource it manages, when the cluster identifier changes.
PROVIDER_IDENTITY = ("clusterIdentifier",)


def load_providers(directory: Path) -> dict[str, dict[str, Any]]:
    """Provider URN -> its recorded inputs."""
    items = read_index(directory)
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


def provider_updates(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """The settings of the stack's providers that change without a new identity: pulumi-kubernetes
    updates the provider in place and every later read and write uses them (a changed
    `helmReleaseSettings` moves where Helm's records are looked up), so a reviewer sees each."""
    if not old or not new or set(old) != set(new):
        return []
    lines: list[str] = []
    for urn, inputs in sorted(new.items()):
        for key in sorted(set(old[urn]) | set(inputs)):
            before, after = old[urn].get(key), inputs.get(key)
            if key in PROVIDER_IDENTITY or before == after:
                continue
            if key == "kubeconfig":  # a secret: that it changes, never its value
                lines.append("`kubeconfig` changes")
            else:
                lines.append(f"`{key}` changes from {_setting(before)} to {_setting(after)}")
    return lines


def _setting(value: Any) -> str:
    return "unset" if value is None else one_line(json.dumps(value) if not isinstance(value, str) else value)


def load_render(directory: Path) -> dict[str, Entry]:
    """URN -> entry for every file-backed resource of a render directory."""
    entries: dict[str, Entry] = {}
    items = {item["urn"]: item for item in read_index(directory)}

    def aliased(urn: str | None) -> bool:
        seen: set[str | None] = set()
        while urn in items and urn not in seen:
            seen.add(urn)
            if items[urn].get("aliases"):
                return True
            urn = items[urn].get("parent")
        return False

    for urn, item in items.items():
        file = item.get("file")
        if file:
            entries[urn] = Entry(urn, file, read_manifest(directory, file), item, aliased(urn))
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
    before = parse_manifest(old.text or "{}", f"the base render's {old.file}")
    after = parse_manifest(new.text or "{}", f"the changed render's {new.file}")
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
    old: dict[str, Entry],
    new: dict[str, Entry],
    provider_replaced: str | None = None,
    provider_updated: list[str] | None = None,
) -> tuple[DiffResult, list[ObjectDiff]]:
    """Summary of the differences and a unified diff per changed file. With `provider_replaced`,
    every resource in both renders is replaced, changed or not."""
    result = DiffResult(
        provider_replaced=provider_replaced,
        provider_updated=[] if provider_replaced else list(provider_updated or []),
        before=len(old),
    )
    hunks: list[ObjectDiff] = []
    moves = _match_moves(old, new)
    old = {**{k: v for k, v in old.items() if k not in moves.values()}, **{n: old[o] for n, o in moves.items()}}
    for urn in sorted(set(old) | set(new), key=lambda u: (new.get(u) or old[u]).file or u):
        before, after = old.get(urn), new.get(urn)
        if before is None and after is not None:
            parse_manifest(after.text or "", f"the changed render's {after.file}")
            imported = bool(after.options.get("import"))
            (result.imported if imported else result.added).append(after.file or urn)
            hunks.append(ObjectDiff(after.file or urn, "imported" if imported else "added", _unified(None, after)))
        elif after is None and before is not None:
            parse_manifest(before.text or "", f"the base render's {before.file}")
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
                (before.text != after.text and not _only_ignored_fields_differ(before, after))
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


def _only_ignored_fields_differ(before: Entry, after: Entry) -> bool:
    """Whether the two versions differ only in fields `pulumi up` leaves alone (`ignoreChanges`,
    e.g. the replica count of an autoscaled workload): the real preview shows no change there."""
    ignored = after.options.get("ignoreChanges") or []
    if not ignored:
        return False
    old = parse_manifest(before.text or "{}", f"the base render's {before.file}")
    new = parse_manifest(after.text or "{}", f"the changed render's {after.file}")
    for dotted in ignored:
        for manifest in (old, new):
            parent = dotted_get(manifest, dotted.rpartition(".")[0]) if "." in dotted else manifest
            if isinstance(parent, dict):
                parent.pop(dotted.rpartition(".")[2], None)
    return old == new


def _unified(before: Entry | None, after: Entry | None) -> list[str]:
    old_lines = (before.text or "").splitlines(keepends=True) if before else []
    new_lines = (after.text or "").splitlines(keepends=True) if after else []
    old_name = f"a/{before.file}" if before else "/dev/null"
    new_name = f"b/{after.file}" if after else "/dev/null"
    return list(difflib.unified_diff(old_lines, new_lines, old_name, new_name))


def extract_revision(project_dir: Path, revision: str, tree: Path) -> None:
    """The files of a git revision, written into `tree`."""
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(project_dir), "archive", revision], capture_output=True, check=False)
    if archive.returncode != 0:
        raise RevisionError(f"cannot read revision {revision}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)


def render_at_revision(
    project_dir: Path, revision: str, stack: str, out: Path, config_file: Path | None = None
) -> bool:
    """Render `stack` with the program and stack file of a git revision (or `config_file`, a stack
    file kept outside the repository, for the base side). False when the stack did not exist there
    (everything is then new)."""
    with tempfile.TemporaryDirectory(prefix="vp-base-") as tmp:
        tree = Path(tmp) / "tree"
        extract_revision(project_dir, revision, tree)
        if config_file is None and not (tree / f"Pulumi.{stack}.yaml").exists():
            out.mkdir(parents=True, exist_ok=True)
            return False
        env = {**os.environ, "PYTHONPATH": str(tree)}
        # The base's own command line: `python -m cli`, or `python -m offline` in revisions older than it.
        command = "cli" if (tree / "cli" / "__main__.py").is_file() else "offline"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                command,
                "render",
                "--stack",
                stack,
                *(["--config-file", str(config_file.resolve())] if config_file else []),
                "--out",
                str(out),
            ],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RevisionError(f"rendering {stack} at {revision} failed:\n{proc.stderr.strip()}")
        return True


def changed_stack_files(project_dir: Path, revision: str, stack: str) -> list[str]:
    """The files of a committed stack that differ from `revision` in the working tree: its stack
    file and every file its `include` names, at the revision or now (a tenant file added, edited
    or removed is a change to that stack, and to no other)."""
    stack_file = f"Pulumi.{stack}.yaml"
    texts = [(project_dir / stack_file).read_bytes() if (project_dir / stack_file).is_file() else b""]
    shown = subprocess.run(
        ["git", "-C", str(project_dir), "show", f"{revision}:{stack_file}"], capture_output=True, check=False
    )
    texts.append(shown.stdout if shown.returncode == 0 else b"")
    patterns: set[str] = set()
    for text in texts:
        try:
            data = read_yaml(text) if text else None
        except StackYamlError:
            continue
        config = data.get("config") if isinstance(data, dict) else None
        include = config.get(f"{PROJECT}:{INCLUDE_KEY}") if isinstance(config, dict) else None
        if isinstance(include, dict):
            for kind in ("files", "tenants"):
                patterns.update(p for p in include.get(kind) or [] if isinstance(p, str))
    pathspecs = [stack_file, *(f":(glob){p}" for p in sorted(patterns))]
    listed = subprocess.run(
        ["git", "-C", str(project_dir), "diff", "--name-only", revision, "--", *pathspecs],
        capture_output=True,
        text=True,
        check=False,
    )
    untracked = subprocess.run(
        ["git", "-C", str(project_dir), "ls-files", "--others", "--exclude-standard", "--", *pathspecs],
        capture_output=True,
        text=True,
        check=False,
    )
    return sorted({*listed.stdout.split(), *untracked.stdout.split()})
