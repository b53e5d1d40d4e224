"""The base every stack-config model derives from, and the translation of pydantic errors.

Stack files use camelCase keys (as Kubernetes and Volcano do); Python uses snake_case. Models are
frozen, reject unknown keys and validate strictly (a quoted number is not a number), so that the
typed spec the components receive is exactly what the stack file says.
"""

import difflib
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from config.errors import NOT_GIVEN, REDACTED, Problem, join_path

SCHEMA_DOCS_VARIABLE = "VOLCANO_PLATFORM_SCHEMA_DOCS"
"""Set to `1` by `python -m config.schema`: the models then carry each attribute's docstring as its
description, which only the JSON Schema and the configuration reference show. Pydantic reads
every model's source to find them, a fifth of the time a command takes to start, so a command
that validates a stack leaves them out."""


class ConfigModel(BaseModel):
    """Frozen, strict, camelCase, no unknown keys."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=os.environ.get(SCHEMA_DOCS_VARIABLE) == "1",
        validate_default=False,
    )


def by_shape(scalar: Any, mapping: Any, *more: tuple[str, Any]) -> Any:
    """A union chosen by the input's shape: a string (or number) picks `scalar`, a mapping picks
    `mapping` (or the model in `more` whose key is present). Errors then come from the one branch
    the user meant, not from every alternative."""

    def pick(value: Any) -> str:
        if isinstance(value, dict):
            for key, _ in more:
                if key in value:
                    return f"~{key}"
            return "~mapping"
        return "~scalar"

    choices = [Annotated[scalar, Tag("~scalar")], Annotated[mapping, Tag("~mapping")]]
    choices += [Annotated[model, Tag(f"~{key}")] for key, model in more]
    return Annotated[Union[tuple(choices)], Discriminator(pick)]  # noqa: UP007 (built at run time)


_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _float_from_text(value: object) -> object:
    """`pulumi config set --path` stores a number that is not an integer as a string (`"0.9"`)
    unless given `--type float`; a decimal string is the number the user typed."""
    if isinstance(value, str) and _DECIMAL.match(value.strip()):
        return float(value)
    return value


def cli_float(gt: float | None = None, le: float | None = None, ge: float | None = None) -> Any:
    """A number within the bounds; also accepted as a decimal string, the form `pulumi config set
    --path` writes."""
    bounds: dict[str, float] = {}
    if gt is not None:
        bounds["exclusiveMinimum"] = gt
    if ge is not None:
        bounds["minimum"] = ge
    if le is not None:
        bounds["maximum"] = le
    return Annotated[
        float,
        Field(gt=gt, ge=ge, le=le),
        BeforeValidator(_float_from_text),
        WithJsonSchema({"anyOf": [{"type": "number", **bounds}, {"type": "string", "pattern": _DECIMAL.pattern}]}),
    ]


def invalid(message: str, fix: str) -> PydanticCustomError:
    """An error raised from a field validator; the fix travels with it to the final message."""
    return PydanticCustomError("platform", "{message}", {"message": message, "fix": fix})


# Parts of the config whose values are never echoed back.
SECRET_PATH_PREFIXES = ("secrets",)
SECRET_FIELD_NAMES = ("kubeconfig", "password")


def is_secret_path(loc: tuple[object, ...]) -> bool:
    if loc and loc[0] in SECRET_PATH_PREFIXES:
        return True
    return any(str(part) in SECRET_FIELD_NAMES for part in loc)


# YAML 1.1 booleans are strings for the Pulumi CLI, which reads stack files as YAML 1.2.
_YAML11_BOOLEANS = {
    **dict.fromkeys(("yes", "Yes", "YES", "on", "On", "ON", "y", "Y"), "true"),
    **dict.fromkeys(("no", "No", "NO", "off", "Off", "OFF", "n", "N"), "false"),
}

_TYPE_FIXES = {
    "int_type": "write a whole number without quotes",
    "int_parsing": "write a whole number without quotes",
    "int_from_float": "write a whole number",
    "float_type": "write a number without quotes",
    "float_parsing": "write a number without quotes",
    "bool_type": "write true or false without quotes",
    "bool_parsing": "write true or false without quotes",
    "string_type": 'write a string (quote it in YAML, e.g. "1.15.0")',
    "dict_type": "write a mapping of key: value",
    "list_type": "write a list",
    "tuple_type": "write a list",
    "model_type": "write a mapping of key: value",
    "model_attributes_type": "write a mapping of key: value",
}


# Bounds pydantic checks (`Field(ge=...)`, `min_length`...), each with the fix its context gives.
_BOUND_FIXES = {
    "greater_than_equal": "use {ge} or more",
    "greater_than": "use a value above {gt}",
    "less_than_equal": "use {le} or less",
    "less_than": "use a value below {lt}",
    "too_short": "give at least {min_length}",
    "too_long": "give at most {max_length}",
    "string_too_short": "write at least {min_length} character(s)",
    "string_too_long": "write at most {max_length} characters",
}
# What each `Field(pattern=...)` of the sections means, so no error shows a regular expression.
PATTERN_WORDS: dict[str, tuple[str, str]] = {
    r"^1\.\d+$": ("must be a Kubernetes minor version", "write it as `1.33`"),
    r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$": (
        "must be a chart version (major.minor.patch)",
        'write it as `"1.15.1"`, quoted',
    ),
    r"^v?\d+\.\d+(\.\d+)?$": ("must be a vLLM version", 'write it as `"0.11.0"`, quoted'),
    r"^\d+(s|m|h)$": ("must be a duration", "write it as `30s`, `10m` or `1h`"),
    r"^[^:/\s]+:/\S*$": ("must be an NFS export", "write it as `<server>:<path>`, e.g. `nfs.lab.example:/exports`"),
}
_UNKNOWN_PATTERN = ("does not have the form this key takes", "see the key in docs/configuration.md")


def problems_from_validation_error(
    error: ValidationError,
    root: type[BaseModel],
    relocate: Callable[[tuple[object, ...]], tuple[object, ...]] = lambda loc: loc,
) -> list[Problem]:
    """Turn pydantic's errors into problems with key paths, values and fixes. `relocate` moves a
    location to where the value was written (e.g. `modelDefaults` rather than every model)."""
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for item in error.errors(include_url=False):
        validated = tuple(_clean_loc(item["loc"]))
        loc = relocate(validated)
        kind = item["type"]
        ctx = item.get("ctx") or {}
        got: object = item.get("input", NOT_GIVEN)
        if is_secret_path(loc):
            got = REDACTED
        if kind == "platform":
            message, fix = str(ctx.get("message", item["msg"])), str(ctx.get("fix", ""))
        elif kind == "extra_forbidden":
            key = loc[-1]
            allowed = _allowed_keys(root, validated[:-1])
            close = difflib.get_close_matches(str(key), allowed, n=1)
            message = f"unknown key `{key}`"
            if close:
                fix = f"did you mean `{close[0]}`?"
            else:
                fix = "remove it" + ("; valid keys here: " + ", ".join(allowed) if allowed else "")
            got = NOT_GIVEN
        elif kind == "missing":
            message, fix, got = "required key is missing", f"add `{loc[-1]}`", NOT_GIVEN
        elif kind in ("union_tag_invalid", "literal_error", "enum"):
            message = item["msg"].replace("Input should be", "must be")
            fix = "use one of the listed values"
        elif kind in ("bool_type", "bool_parsing") and isinstance(got, str) and got in _YAML11_BOOLEANS:
            message = "must be a boolean"
            fix = (
                f"write `{_YAML11_BOOLEANS[got]}`: the Pulumi CLI reads stack files as YAML 1.2, "
                f"where `{got}` is a string"
            )
        elif kind == "string_pattern_mismatch":
            message, fix = PATTERN_WORDS.get(str(ctx.get("pattern")), _UNKNOWN_PATTERN)
        elif kind in ("too_short", "too_long"):
            bound = "at least {min_length}" if kind == "too_short" else "at most {max_length}"
            message = f"holds {ctx.get('actual_length')} entries; it takes {bound.format(**ctx)}"
            fix = _BOUND_FIXES[kind].format(**ctx)
        elif kind in _BOUND_FIXES:
            message = item["msg"].replace("Input should be", "must be")
            fix = _BOUND_FIXES[kind].format(**ctx)
        else:
            message = item["msg"].replace("Input should be", "must be").replace("Value error, ", "")
            fix = _TYPE_FIXES.get(kind, "")
        path = join_path(*loc) or "(stack config)"
        if (path, message) in seen:  # unions report the same failure once per member
            continue
        seen.add((path, message))
        problems.append(Problem(path=path, message=message, fix=fix, got=got))
    return problems


def _clean_loc(loc: tuple[int | str, ...]) -> list[object]:
    """Drop the union-member and validator names pydantic inserts into locations."""
    out: list[object] = []
    for part in loc:
        if isinstance(part, str) and (
            ("[" in part and part.endswith("]")) or part.startswith(("function-", "~", "constrained-"))
        ):
            continue
        if part in ("str", "int", "float", "bool", "dict", "list", "tuple"):
            continue
        out.append(part)
    return out


def _allowed_keys(root: type[BaseModel], loc: tuple[object, ...]) -> list[str]:
    """The camelCase keys a model at `loc` accepts, for "did you mean" hints."""
    current: Any = root
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    models = [m for m in _members(current) if isinstance(m, type) and issubclass(m, BaseModel)]
    keys: list[str] = []
    for model in models:
        for name, info in model.model_fields.items():
            keys.append(info.alias or name)
    return sorted(set(keys))


def _members(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _members(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _members(arg)]
    return [annotation]


def _step(annotation: Any, part: object) -> Any:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, info in member.model_fields.items():
                if part in (name, info.alias):
                    return info.annotation
            continue
        origin = get_origin(member)
        args = get_args(member)
        if origin in (dict, Mapping) and len(args) == 2:
            return args[1]
        if origin in (list, tuple) and args:
            return args[0]
    return None
