"""The reviewer's view of a change, the same in the terminal (`diff`) and in a pull request
(`diff --markdown`): what the change does to the platform (models, tenants, placement, new
warnings, from the two renders' `summary.json`), what the scheduler will do with it where a
cluster dump is given, then the objects.

Objects that list every model or tenant (the dashboard's variables, the alert rules' selectors)
change whenever a model or tenant is added or removed. Where that is their only difference they
are grouped apart, so a reviewer reads them as the consequence they are; any other change to them
is shown as a change of its own.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.errors import one_line
from offline.diff import (
    DiffResult,
    Entry,
    ObjectDiff,
    compare,
    load_providers,
    load_render,
    provider_replacement,
    provider_updates,
)
from offline.markdown import code, fence, html_code
from offline.render_folder import parse_manifest
from offline.summary_data import SUMMARY_DATA_FILE, placement_words, read_summary_data, replicas_words, topology_words

DERIVED = "changed only by the models or tenants added or removed (it lists every one)"
SYMBOL = {"added": "+", "removed": "-", "changed": "~"}


@dataclass(frozen=True)
class Row:
    name: str
    change: str
    """`added`, `removed` or `changed`."""
    text: str


@dataclass
class PlatformChanges:
    sections: list[tuple[str, list[Row]]] = field(default_factory=list)
    new_warnings: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    """Models and tenants added or removed."""
    unreadable: str = ""
    """Why the two renders cannot be compared (a side without `summary.json`)."""

    @property
    def empty(self) -> bool:
        return not (self.sections or self.new_warnings or self.unreadable)


_WORDS: dict[str, Callable[[Any], str]] = {
    "replicas": lambda v: replicas_words(v or {}),
    "topology": topology_words,
    "placement": placement_words,
}


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return one_line(", ".join(map(str, value)) or "-")
    return one_line(_quantities(value) if isinstance(value, dict) else str(value))


def _quantities(value: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (value or {}).items()) or "-"


def _field(key: str, value: Any) -> str:
    """A field of an entry in words: replica counts, topology and placement as people read them."""
    if key in _WORDS and (value is None or isinstance(value, dict)):
        return _cell(_WORDS[key](value))
    return _cell(value)


def _rows(old: dict[str, Any], new: dict[str, Any], describe: Callable[[dict[str, Any]], str]) -> list[Row]:
    """The entries added, removed or changed between two summaries' sections."""
    rows: list[Row] = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if before is None or after is None:
            change = "added" if before is None else "removed"
            rows.append(Row(name, change, one_line(describe(after or before or {}))))
        else:
            changed = [
                f"{key}: {_field(key, before.get(key, '-'))} → {_field(key, after.get(key, '-'))}"
                for key in dict.fromkeys([*before, *after])
                if before.get(key) != after.get(key)
            ]
            rows.append(Row(name, "changed", "; ".join(changed)))
    return rows


def _model(m: dict[str, Any]) -> str:
    text = f"{m.get('kind')}, {replicas_words(m.get('replicas') or {})} × {m.get('podsPerReplica')} pods"
    return text + (f", {placement_words(m['placement'])}" if "placement" in m else "")


def _tenant(t: dict[str, Any]) -> str:
    return (
        f"queue {t.get('queue')} under {t.get('parent') or 'root'}, weight {t.get('weight')}, "
        f"deserved {_quantities(t.get('deserved'))}, guarantee {_quantities(t.get('guarantee'))}, "
        f"capability {_quantities(t.get('capability'))}"
        + (f", hostnames {', '.join(t['hostnames'])}" if t.get("hostnames") else "")
    )


def _domain(d: dict[str, Any]) -> str:
    return f"tier {d.get('tier')}, {d.get('hard')} hard + {d.get('soft')} soft planned, {d.get('status')}"


def nothing_yet(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary of the same version with nothing in it: the base of a stack that a change adds."""
    return {key: type(value)() if isinstance(value, (dict, list)) else value for key, value in summary.items()}


def platform_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> PlatformChanges:
    """Models added, removed or resized; tenants with their quotas; placement and demand per
    topology domain; warnings that are new."""
    if old is None or new is None:
        side = "base" if old is None else "changed"
        return PlatformChanges(unreadable=f"the {side} render has no {SUMMARY_DATA_FILE}; see the objects")
    if old.get("schemaVersion") != new.get("schemaVersion"):
        # Only the fields both versions hold are compared.
        common = ("kind", "tenant", "replicas", "podsPerReplica")
        old = {**old, "models": {n: {k: m.get(k) for k in common} for n, m in old["models"].items()}}
        new = {**new, "models": {n: {k: m.get(k) for k in common} for n, m in new["models"].items()}}
    if not any("hostnames" in t for t in old["tenants"].values()):
        # A base rendered before tenants carried their hostnames (summary.json gained the optional
        # field without a new version): left out, not shown as every gateway tenant changed. The
        # Gateway's object diff shows hostnames either way.
        new = {
            **new,
            "tenants": {n: {k: v for k, v in t.items() if k != "hostnames"} for n, t in new["tenants"].items()},
        }
    changes = PlatformChanges()
    for title, key, describe in (("Models", "models", _model), ("Tenants", "tenants", _tenant)):
        rows = _rows(old[key], new[key], describe)
        changes.names |= {row.name for row in rows if row.change != "changed"}
        if rows:
            changes.sections.append((title, rows))
    domains = _rows(old["domains"], new["domains"], _domain)
    if domains:
        changes.sections.append(("Placement per domain", domains))
    before = {str(w.get("text")) for w in old["warnings"] if isinstance(w, dict)}
    changes.new_warnings = [
        str(w.get("text")) for w in new["warnings"] if isinstance(w, dict) and str(w.get("text")) not in before
    ]
    return changes


def _name_pattern(names: Iterable[str]) -> re.Pattern[str]:
    """A listed name with the separator that joins it to its neighbours: `a|b` in a regex
    selector, `a,b` in a variable's query, `"a", "b"` in a list."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    name = rf"(?<![\w.-])(?:{alternatives})(?![\w.-])"
    return re.compile(rf'\\?"{name}\\?", |, \\?"{name}\\?"(?=[\]])|{name}[|,]|[|,]{name}')


def only_names_differ(before: Entry, after: Entry, names: set[str]) -> bool:
    """Whether two versions of an object are the same once the added or removed names are taken
    out of the lists that hold them (and `=~` read as `=`: a selector of one name is an equality)."""
    if not names or before.file != after.file:
        return False
    pattern = _name_pattern(names)

    def normalized(entry: Entry, side: str) -> str:
        data = parse_manifest(entry.text or "{}", f"the {side} render's {entry.file}")
        return pattern.sub("", json.dumps(data, sort_keys=True)).replace("=~", "=")

    return normalized(before, "base") == normalized(after, "changed")


@dataclass
class Review:
    result: DiffResult
    objects: list[ObjectDiff]
    """Each changed object's diff, the derived ones last."""
    derived: list[str]
    """Objects changed only by the names of models and tenants added or removed."""
    platform: PlatformChanges


def review(old_dir: Path, new_dir: Path) -> Review:
    old_summary, new_summary = read_summary_data(old_dir), read_summary_data(new_dir)
    if old_summary is None and new_summary is not None and old_dir.is_dir() and not any(old_dir.iterdir()):
        old_summary = nothing_yet(new_summary)  # the stack is new in this change: all of it is added
    platform = platform_changes(old_summary, new_summary)
    old_providers, new_providers = load_providers(old_dir), load_providers(new_dir)
    provider = provider_replacement(old_providers, new_providers)
    old, new = load_render(old_dir), load_render(new_dir)
    result, objects = compare(old, new, provider, provider_updates(old_providers, new_providers))
    by_file = {e.file: e for e in old.values()}, {e.file: e for e in new.values()}
    derived = [
        f for f in result.changed if f in by_file[0] and only_names_differ(by_file[0][f], by_file[1][f], platform.names)
    ]
    objects.sort(key=lambda o: o.file in derived)
    return Review(result, objects, derived, platform)


def removal_warning(result: DiffResult) -> str:
    return (
        f"MOST OBJECTS REMOVED: this change removes {len(result.removed)} of the stack's {result.before} objects; "
        "check that the stack file still holds the stack's config"
    )


def count_line(result: DiffResult) -> str:
    if result.empty:
        return "no changes"
    counts = (
        f"{len(result.added)} added, {len(result.changed)} changed, "
        f"{len(result.replaced)} replaced, {len(result.removed)} removed"
    )
    counts += f", {len(result.imported)} imported" if result.imported else ""
    return counts + (", the provider updated" if result.provider_updated else "")


def object_lines(found: Review) -> list[str]:
    """The objects a line each: `+` added, `=` imported, `~` changed, `+-` replaced, `-` removed;
    the derived ones after their heading."""
    result = found.result
    lines = [f"  ~ the Kubernetes provider, in place: {change}" for change in result.provider_updated]
    lines += [f"  + {f}" for f in result.added]
    lines += [
        f"  = {f}: imported (an existing object the stack takes over, then updates in place)" for f in result.imported
    ]
    lines += [f"  ~ {f}" for f in result.changed if f not in found.derived]
    lines += [f"  +- {f}: replaced, {why}" for f, why in result.replaced]
    lines += [f"  - {f}{kept}" for f, kept in result.removed]
    if found.derived:
        lines += [f"  {DERIVED.replace('it lists', 'they list')}:", *(f"  ~ {f}" for f in found.derived)]
    return lines


def _provider_line(result: DiffResult) -> str:
    return (
        f"PROVIDER REPLACED: every resource is replaced ({result.provider_replaced}); "
        "see docs/operations.md, moving a stack to a new cluster"
    )


def _diff_text(diff: ObjectDiff) -> str:
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff.lines)


def platform_text(changes: PlatformChanges) -> list[str]:
    if changes.unreadable:
        return [f"platform changes cannot be listed: {changes.unreadable}"]
    lines: list[str] = []
    for title, rows in changes.sections:
        lines += [title, *(f"  {SYMBOL[r.change]} {r.name}: {r.text}" for r in rows)]
    if changes.new_warnings:
        lines += ["New warnings", *(f"  {w}" for w in changes.new_warnings)]
    return lines


def platform_markdown(changes: PlatformChanges) -> list[str]:
    if changes.unreadable:
        return [f"_Platform changes cannot be listed: {changes.unreadable}._", ""]
    lines: list[str] = []
    for title, rows in changes.sections:
        lines += [f"**{title}**", "", "| | | before → after |", "|---|---|---|"]
        lines += [f"| {code(r.name)} | {r.change} | {r.text.replace('|', chr(92) + '|')} |" for r in rows]
        lines.append("")
    if changes.new_warnings:
        lines += ["**New warnings**", "", fence("\n".join(changes.new_warnings)), ""]
    return lines


def diff_dirs(
    old_dir: Path, new_dir: Path, title: str = "", files: Iterable[str] = (), whatif: str = ""
) -> tuple[DiffResult, str]:
    """The terminal's form: the platform's changes, the what-if, the objects, then their diffs."""
    found = review(old_dir, new_dir)
    result = found.result
    files = list(files)
    lines = [title] if title else []
    lines += [f"files changed: {', '.join(files)}"] if files else []
    lines += [removal_warning(result)] if result.removes_most else []
    lines += [_provider_line(result)] if result.provider_replaced else []
    if not result.empty or not found.platform.empty:
        lines += platform_text(found.platform)
    lines += [whatif.rstrip("\n"), ""] if whatif else []
    lines += [count_line(result), *object_lines(found)]
    text = "\n".join(lines) + "\n"
    if found.objects:
        text += "\n" + "".join(_diff_text(o) for o in found.objects)
    return result, text


def diff_markdown(
    old_dir: Path, new_dir: Path, title: str = "", files: Iterable[str] = (), whatif: str = ""
) -> tuple[DiffResult, str]:
    """The pull request's form: the same order, tables for the platform, each object's diff
    collapsed under its file name."""
    found = review(old_dir, new_dir)
    result = found.result
    lines = [f"### {title}", ""] if title else []
    files = list(files)
    if files:
        lines += ["Files of this stack changed: " + ", ".join(code(f) for f in files), ""]
    if result.removes_most:
        lines += [f"> **{removal_warning(result)}**", ""]
    if not found.platform.empty:
        lines += platform_markdown(found.platform)
    elif not result.empty:
        lines += ["_No change to models, tenants, placement or warnings._", ""]
    if whatif:
        lines += [whatif.rstrip("\n"), ""]
    replaced = " — **the Kubernetes provider is replaced: every resource is replaced**"
    lines += [f"**Objects:** {count_line(result)}" + (replaced if result.provider_replaced else ""), ""]
    if found.objects or result.provider_updated:
        listing = [_provider_line(result)] if result.provider_replaced else []
        listing += [count_line(result), *object_lines(found)]
        count = f"the {len(found.objects)} object(s)" + (" and the provider" if result.provider_updated else "")
        lines += [f"<details><summary>{count}</summary>", "", fence("\n".join(listing))]
        lines += ["</details>", ""]
    for diff in found.objects:
        change = DERIVED if diff.file in found.derived else diff.change
        lines += [f"<details><summary>{html_code(diff.file)} {html.escape(change)}</summary>", ""]
        lines += [fence(_diff_text(diff), "diff"), "</details>", ""]
    return result, "\n".join(lines)
