"""Sections of a stack read from the files its `include` names.

The Pulumi CLI hands a stack file's config to the program in one environment variable
(`PULUMI_CONFIG`), which Linux limits to 128 KiB; the program therefore reads included files
itself, from the folder of the stack file: `$VOLCANO_PLATFORM_STACK_DIR` when the offline engine
renders a stack file kept elsewhere, else the project's `stackConfigDir` (Pulumi.yaml), else the
project directory, as the CLI looks for stack files. Paths never leave that folder.

Files are read with the CLI's YAML rules (`config.stack_file.yaml12`), hold the project's keys
without the `volcano-platform:` prefix, and are merged before validation, so every rule that spans
sections sees the whole config; `origins` says which file each section or entry came from, so a
problem names the file as well as the key path."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from config.errors import Problem, describe_value, join_path
from config.project import PROJECT
from config.stack_file.yaml12 import FILE_PATH, StackYamlError, read_yaml

MAX_PATTERN_LENGTH = 300
"""Longest `include` entry; a longer one is refused before any folder is searched."""

STACK_DIR_VARIABLE = "VOLCANO_PLATFORM_STACK_DIR"
INCLUDE_KEY = "include"
ENTRY_SECTIONS = ("tenants", "models", "priorityClasses", "registries")
"""Sections whose entries may come from several places."""
NOT_IN_FILES = ("secrets", INCLUDE_KEY)
"""`secrets` must be encrypted, which only the stack file can hold; files do not include files."""
TENANT_FILE_SECTIONS = ("tenants", "models")
PROJECT_DIR = Path(__file__).resolve().parents[2]

STACK_FILE = "the stack file"
Origins = dict[tuple[str, ...], str]
"""(section,) or (section, entry) -> the file (relative to the stack folder) it was written in."""


@dataclass
class Included:
    raw: dict[str, Any]
    origins: Origins = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    tenant_files: dict[str, str] = field(default_factory=dict)
    """Tenant -> its tenant file, for the tenants `include.tenants` brought in."""
    tenant_raw: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tenant file -> its sections as written (before `modelDefaults`), for `tenantPolicy`."""


def stack_dir() -> Path:
    """The folder the stack files are in, as the program finds it under either engine."""
    if os.environ.get(STACK_DIR_VARIABLE):
        return Path(os.environ[STACK_DIR_VARIABLE])
    try:
        project = read_yaml((PROJECT_DIR / "Pulumi.yaml").read_bytes())
    except (OSError, StackYamlError):
        return PROJECT_DIR
    configured = project.get("stackConfigDir") if isinstance(project, Mapping) else None
    return PROJECT_DIR / configured if isinstance(configured, str) and configured else PROJECT_DIR


def _problem(path: str, message: str, fix: str, got: object = None) -> Problem:
    return Problem(path, message, fix, got) if got is not None else Problem(path, message, fix)


def _paths(base: Path, pattern: str, where: str, problems: list[Problem]) -> list[Path]:
    """The files a pattern names, inside `base` only."""
    if len(pattern) > MAX_PATTERN_LENGTH:  # checked before any globbing (the section checks it too late)
        problems.append(
            _problem(
                where,
                f"the pattern is {len(pattern)} characters long, more than the {MAX_PATTERN_LENGTH} an include takes",
                "name the files with a shorter path or pattern",
                pattern[:80] + "...",
            )
        )
        return []
    pure = PurePosixPath(pattern)
    if pure.is_absolute() or ".." in pure.parts or "\\" in pattern or "**" in pattern:
        problems.append(
            _problem(
                where,
                "an included file must be named relative to the stack file's folder, without `..` or `**`",
                "write a path such as `clusters/aicloud-b/tenants/*.yaml`",
                pattern,
            )
        )
        return []
    root = base.resolve()
    found = sorted(base.glob(pattern)) if any(c in pattern for c in "*?[") else [base / pattern]
    special = [p for p in found if p.exists() and not p.is_file()]
    if special and not any(c in pattern for c in "*?["):
        # A folder, a FIFO or a device: reading a FIFO would wait forever, a device without end.
        problems.append(
            _problem(
                where,
                f"`{pattern}` is not a regular file",
                "name a YAML file (a pattern such as `tenants/*.yaml` skips folders)",
                pattern,
            )
        )
        return []
    found = [p for p in found if p.is_file() or not p.exists()]
    if not found or not all(p.exists() for p in found):
        problems.append(
            _problem(
                where, f"no file matches `{pattern}` in {base}", "check the path (it is relative to the stack file)"
            )
        )
        return []
    inside = []
    for path in found:
        if not path.resolve().is_relative_to(root):
            problems.append(
                _problem(
                    where,
                    f"`{path.relative_to(base)}` leads outside the stack's folder (a link)",
                    "include files of the repository only",
                    pattern,
                )
            )
        else:
            inside.append(path)
    return inside


def _listed_twice(name: str, first: str, where: str) -> Problem:
    """A file read twice would be merged twice, or, listed under `files` and `tenants`, read as the
    platform's file and escape the tenant boundary: every file is listed by one entry."""
    return _problem(
        where,
        f"`{name}` is listed already, by `{first}`" + (" (a link and its target)" if first == where else ""),
        "list each file once: a tenant's file under `include.tenants` alone, the platform's under `include.files`; "
        "narrow the pattern that matches it too",
        name,
    )


def _read(base: Path, path: Path, problems: list[Problem], label: str) -> dict[str, Any] | None:
    """The file's sections; `label` names the whole file where a problem is in no key of it (its
    YAML syntax, its encoding), since it is not the stack file."""
    name = str(path.relative_to(base))
    try:
        data = read_yaml(path.read_bytes(), lambda key_path: join_path(*key_path) or name)
    except OSError as error:
        problems.append(Problem(name, f"cannot read the file: {error.strerror}", "check the file"))
        return None
    except StackYamlError as error:
        problems += [_in(p if p.path != FILE_PATH else replace(p, path=label), name) for p in error.problems]
        return None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        problems.append(
            Problem(
                name,
                f"an included file is a mapping of the stack's keys (got {describe_value(data)})",
                "write `models: ...`, `tenants: ...`",
            )
        )
        return None
    return dict(data)


def _in(problem: Problem, file: str) -> Problem:
    return Problem(problem.path, problem.message, problem.fix, problem.got, problem.severity, file=file)


def merge_includes(raw: Mapping[str, Any], base: Path) -> Included:
    """`raw` (the stack file's keys) with every included file's sections merged in."""
    merged = {
        key: (dict(value) if key in ENTRY_SECTIONS and isinstance(value, Mapping) else value)
        for key, value in raw.items()
    }
    result = Included(merged)
    include = raw.get(INCLUDE_KEY)
    if not isinstance(include, Mapping) or not include:
        return result
    origins: Origins = {}
    for key, value in raw.items():
        if key != INCLUDE_KEY and not _unset(value):
            origins[(key,)] = STACK_FILE
    listed: dict[Path, str] = {}
    """Each file read (its real path) -> the entry that listed it first."""
    for kind in ("files", "tenants"):
        patterns = include.get(kind) or []
        if not isinstance(patterns, list):
            continue  # the type error is reported by validation
        for index, pattern in enumerate(patterns):
            if not isinstance(pattern, str):
                continue
            where = join_path(INCLUDE_KEY, kind, index)
            for path in _paths(base, pattern, where, result.problems):
                name = str(path.relative_to(base))
                if path.resolve() in listed:  # by another entry, or by this one through a link
                    result.problems.append(_listed_twice(name, listed[path.resolve()], where))
                    continue
                listed[path.resolve()] = where
                result.files.append(name)
                data = _read(base, path, result.problems, "(tenant file)" if kind == "tenants" else "(included file)")
                if data is None:
                    continue
                if kind == "tenants":
                    data = _tenant_file(data, name, result.problems)
                    for tenant in data.get("tenants") or {}:
                        result.tenant_files[tenant] = name
                    result.tenant_raw[name] = data
                platform = {file for file in result.files if file not in result.tenant_raw} | {STACK_FILE}
                _merge(merged, data, name, origins, result.problems, platform if kind == "tenants" else None)
    result.origins = origins
    return result


def _tenant_file(data: dict[str, Any], name: str, problems: list[Problem]) -> dict[str, Any]:
    """One tenant and its models; models name that tenant (it is their default)."""
    extra = [key for key in data if key not in TENANT_FILE_SECTIONS]
    tenants = data.get("tenants")
    if extra or not isinstance(tenants, Mapping) or len(tenants) != 1:
        problems.append(
            Problem(
                join_path(*(extra[:1] or ["tenants"])),
                "a tenant file holds one tenant under `tenants` and its models under `models`, nothing else",
                "move other sections to the stack file or an `include.files` file",
                file=name,
            )
        )
        return {}
    (tenant,) = tenants
    models = data.get("models") or {}
    if not isinstance(models, Mapping):
        return data
    owned = {}
    for model, settings in models.items():
        if isinstance(settings, Mapping):
            named = settings.get("tenant", tenant)
            if named != tenant:
                problems.append(
                    Problem(
                        join_path("models", model, "tenant"),
                        f"a model in the tenant file of `{tenant}` belongs to `{tenant}`",
                        f"move the model to the tenant file of `{named}`",
                        got=named,
                        file=name,
                    )
                )
            settings = {**settings, "tenant": tenant}
        owned[model] = settings
    return {**data, "models": owned}


def _merge(
    merged: dict[str, Any],
    data: dict[str, Any],
    name: str,
    origins: Origins,
    problems: list[Problem],
    platform_files: set[str] | None = None,
) -> None:
    """`data` (the sections of file `name`) merged into `merged`. For a tenant file,
    `platform_files`: the files whose tenants it may complete (the stack file, `include.files`)."""
    for key, value in data.items():
        if key.startswith(f"{PROJECT}:") or key in NOT_IN_FILES:
            problems.append(
                Problem(
                    key,
                    "an included file holds the project's keys without the prefix, and neither `secrets` (they must be "
                    "encrypted in the stack file) nor `include`",
                    f"write `{key.removeprefix(PROJECT + ':')}:`"
                    if key.startswith(PROJECT)
                    else "keep it in the stack file",
                    file=name,
                )
            )
            continue
        if key in ENTRY_SECTIONS and isinstance(value, Mapping):
            section = merged.setdefault(key, {})
            if not isinstance(section, dict):
                continue  # the stack file's own value has the wrong type; validation reports it
            for entry, settings in value.items():
                first = origins.get((key, entry)) or (STACK_FILE if entry in section else None)
                if first is not None and platform_files is not None and key == "tenants" and first in platform_files:
                    _split_tenant(section, entry, settings, (first, name), origins, problems)
                    continue
                if first is not None:
                    problems.append(
                        Problem(
                            join_path(key, entry),
                            f"defined twice: in {first} and in {name}",
                            "keep one definition",
                            file=name,
                        )
                    )
                    continue
                section[entry] = settings
                origins[(key, entry)] = name
        elif key in merged and not _unset(merged[key]):
            problems.append(
                Problem(
                    key,
                    f"the section is written in {origins.get((key,), STACK_FILE)} and in {name}",
                    "write it in one place",
                    file=name,
                )
            )
        else:
            merged[key] = value
            origins[(key,)] = name


def _split_tenant(
    section: dict[str, Any],
    tenant: str,
    settings: Any,
    files: tuple[str, str],
    origins: Origins,
    problems: list[Problem],
) -> None:
    """A tenant the platform's files write (its quota, say) and its tenant file completes (its
    gateway, namespaces...): the two entries are one, key by key, and a key written in both is
    refused at that key, so a tenant file never changes what the platform wrote for it."""
    platform, own = files
    first = section[tenant]
    if not isinstance(first, Mapping) or not isinstance(settings, Mapping):
        return  # a type error, which validation reports
    for key in first:
        origins.setdefault(("tenants", tenant, key), platform)
    merged = dict(first)
    for key, value in settings.items():
        if key in merged:
            problems.append(
                Problem(
                    join_path("tenants", tenant, key),
                    f"written in {platform} (the platform's) and in {own}, the tenant's file",
                    f"keep it in {platform}: the tenant file holds what the platform's files leave to the tenant",
                    file=own,
                )
            )
            continue
        merged[key] = value
        origins[("tenants", tenant, key)] = own
    section[tenant] = merged


def _unset(value: Any) -> bool:
    """`{}` is how Pulumi.yaml's defaults say "not set"."""
    return value is None or (isinstance(value, Mapping) and not value)


def file_of(path: str, origins: Origins) -> str | None:
    """The included file a problem's key path points into, if any."""
    parts = path.replace("[", ".").split(".")
    for key in (tuple(parts[:3]) if len(parts) > 2 else (), tuple(parts[:2]) if len(parts) > 1 else (), (parts[0],)):
        origin = origins.get(tuple(key))
        if origin is not None and origin != STACK_FILE:
            return origin
    return None
