"""`modelDefaults`: settings merged under every model, and problems reported where they were written."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from config.errors import Problem, join_path
from config.schema.merge import deep_merge
from config.sections.models import ModelConfig


def apply_model_defaults(raw: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    defaults = raw.get("modelDefaults")
    models = raw.get("models")
    if not isinstance(defaults, Mapping) or not defaults:
        return raw
    allowed = {info.alias or name for name, info in ModelConfig.model_fields.items()}
    for key in defaults:
        if key not in allowed:
            problems.append(
                Problem(
                    join_path("modelDefaults", key),
                    f"`{key}` is not a model setting",
                    "use keys a model accepts (image, env, source, resources, ...)",
                )
            )
    if not isinstance(models, Mapping):
        return raw
    merged = {
        name: merge_model(defaults, model) if isinstance(model, Mapping) else model for name, model in models.items()
    }
    return {**raw, "models": merged}


# Lists in `modelDefaults` that a model's own list extends rather than replaces, with the identity
# of an entry: a model's entry replaces the default's with the same identity.
MERGED_LISTS: dict[str, Callable[[Any], str]] = {
    "tolerations": lambda entry: json.dumps(entry, sort_keys=True),
    "imagePullSecrets": lambda entry: json.dumps(entry),
    "networks": lambda entry: str(entry.get("name")) if isinstance(entry, Mapping) else json.dumps(entry),
}


# Keys of `source` and of a volume that name mutually exclusive kinds: a model that picks one drops
# the default's other kinds instead of combining both (a hub source under a default NFS source).
EXCLUSIVE_KINDS = ("nfs", "pvc", "hostPath", "hub", "configMap")


def _drop_other_kinds(default: Any, own: Any) -> Any:
    if not isinstance(default, Mapping) or not isinstance(own, Mapping):
        return default
    chosen = [kind for kind in EXCLUSIVE_KINDS if kind in own]
    if not chosen:
        return default
    # `model` is a directory of a volume source; a hub source names its model by id.
    dropped = {*EXCLUSIVE_KINDS, "model"} if "hub" in chosen else set(EXCLUSIVE_KINDS)
    return {key: value for key, value in default.items() if key not in dropped or key in chosen}


def _without_replaced_kinds(defaults: Mapping[str, Any], model: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(defaults)
    if "source" in out and "source" in model:
        out["source"] = _drop_other_kinds(out["source"], model["source"])
    volumes, own_volumes = out.get("volumes"), model.get("volumes")
    if isinstance(volumes, Mapping) and isinstance(own_volumes, Mapping):
        out["volumes"] = {name: _drop_other_kinds(v, own_volumes.get(name)) for name, v in volumes.items()}
    return out


def merge_model(defaults: Mapping[str, Any], model: Mapping[str, Any]) -> dict[str, Any]:
    """`modelDefaults` under one model: mappings (env, labels, resources...) merge key by key,
    `tolerations`, `imagePullSecrets` and `networks` are joined (the model's entry wins for the same
    toleration, registry or network name), every other list and value is replaced. A model that
    chooses a source or volume kind (`hub`, `nfs`...) replaces the default's kind."""
    merged = deep_merge(_without_replaced_kinds(defaults, model), model)
    for key, identity in MERGED_LISTS.items():
        base, own = defaults.get(key), model.get(key)
        if isinstance(base, list) and isinstance(own, list):
            by_identity = {identity(entry): entry for entry in base}
            by_identity.update({identity(entry): entry for entry in own})
            merged[key] = list(by_identity.values())
    return merged


def _has(data: Any, path: tuple[object, ...]) -> bool:
    """Whether `data` holds a value at `path` (mapping keys and list indexes)."""
    for key in path:
        in_mapping = isinstance(data, Mapping) and key in data
        in_list = isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data)
        if not (in_mapping or in_list):
            return False
        data = data[key]
    return True


def blame_model_defaults(models: Any, defaults: Any) -> Callable[[tuple[object, ...]], tuple[object, ...]]:
    """A bad value a model inherits from `modelDefaults` is reported once, where it was written."""

    def relocate(loc: tuple[object, ...]) -> tuple[object, ...]:
        if len(loc) > 2 and loc[0] == "models" and isinstance(models, Mapping) and isinstance(defaults, Mapping):
            rest = loc[2:]
            if not _has(models.get(loc[1]), rest) and _has(defaults, rest):
                return ("modelDefaults", *rest)
        return loc

    return relocate


def split_path(path: str) -> list[str]:
    """`models.a.resources.devices[rdma/x]` -> ["models", "a", "resources", "devices", "rdma/x"]."""
    return [part for part in re.split(r"\.(?![^\[]*\])|\[|\]", path) if part]


def relocate_inherited(problems: list[Problem], models: Any, defaults: Any) -> list[Problem]:
    """A problem with a value models inherit is reported once, naming the models it affects: at
    `modelDefaults` where it was written there, and a warning about a platform default that several
    models keep at `modelDefaults` too (setting it there changes it for all of them)."""
    if not isinstance(models, Mapping):
        return problems
    defaults = defaults if isinstance(defaults, Mapping) else {}
    out: list[Problem] = []
    moved: dict[tuple[str, str, str], tuple[int, list[str]]] = {}
    platform: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for problem in problems:
        parts = split_path(problem.path)
        if len(parts) > 2 and parts[0] == "models" and isinstance(models.get(parts[1]), Mapping):
            name = parts[1]
            rest = [int(p) if p.isdigit() else p for p in parts[2:]]
            message = problem.message.replace(f"`{name}`", "the model")
            written = _joined_entry(models[name], defaults, rest)
            if written is not None:
                where, rest = written
                if where == "model":
                    out.append(dataclasses.replace(problem, path=join_path("models", name, *rest)))
                    continue
            in_model, in_defaults = _has(models[name], tuple(rest)), _has(defaults, tuple(rest))
            if written is not None or (not in_model and in_defaults):
                path = join_path("modelDefaults", *rest)
                key = (path, message, problem.severity)
                if key in moved:
                    moved[key][1].append(name)
                    continue
                moved[key] = (len(out), [name])
                out.append(dataclasses.replace(problem, path=path, message=message))
                continue
            if not in_model and problem.severity == "warning" and _platform_default(rest) is not None:
                platform.setdefault((join_path("modelDefaults", *rest), message, problem.fix), []).append(
                    (len(out), name)
                )
        out.append(problem)
    for index, names in moved.values():
        problem = out[index]
        out[index] = dataclasses.replace(problem, message=f"{problem.message} (inherited by {', '.join(names)})")
    dropped: set[int] = set()
    for (path, message, _), found in platform.items():
        if len(found) < 2:
            continue
        first = out[found[0][0]]
        default = _platform_default(split_path(path)[1:])
        kept = ", ".join(name for _, name in found)
        out[found[0][0]] = dataclasses.replace(
            first,
            path=path,
            message=f"{message} ({default} is the platform default, which {kept} keep)",
        )
        dropped.update(index for index, _ in found[1:])
    return [problem for index, problem in enumerate(out) if index not in dropped]


def _platform_default(rest: list[Any]) -> object | None:
    """The value a model gets at `rest` when neither it nor `modelDefaults` sets it, when the
    platform has one (None for keys without a default, entries of lists and maps)."""
    owner: Any = ModelConfig
    for position, key in enumerate(rest):
        fields = getattr(owner, "model_fields", None)
        field = next((f for n, f in (fields or {}).items() if (f.alias or n) == key), None)
        if field is None or field.is_required():
            return None
        if position == len(rest) - 1:
            default = field.get_default(call_default_factory=True)
            return None if isinstance(default, BaseModel) else default
        owner = field.annotation
    return None


def _joined_entry(
    model: Mapping[str, Any], defaults: Mapping[str, Any], rest: list[Any]
) -> tuple[str, list[Any]] | None:
    """For a path into a joined list (`tolerations[3]`), where its entry was written: ("model" or
    "defaults", the path with the index in that list)."""
    if len(rest) < 2 or rest[0] not in MERGED_LISTS or not isinstance(rest[1], int):
        return None
    key, index = rest[0], rest[1]
    merged = merge_model(defaults, model).get(key)
    if not isinstance(merged, list) or index >= len(merged):
        return None
    identity = MERGED_LISTS[key]
    wanted = identity(merged[index])
    for where, source in (("model", model), ("defaults", defaults)):
        entries = source.get(key)
        if isinstance(entries, list):
            for position, entry in enumerate(entries):
                if identity(entry) == wanted:
                    return where, [key, position, *rest[2:]]
    return None
