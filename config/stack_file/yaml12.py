"""Stack and project files read the way the Pulumi CLI reads them, so that what renders offline is
what `pulumi up` will see.

The CLI decodes YAML with go-yaml v3 into untyped values. Its scalar rules are YAML 1.2-like and
differ from PyYAML's YAML 1.1 defaults: only `true`/`false` (in three spellings) are booleans, so
`yes`, `no`, `on`, `off`, `y`, `n` are strings; integers may carry `_` and a `0x`, `0o` or `0b`
prefix, and a leading zero still means octal (`017` is 15, `08` is the float 8); timestamps and
sexagesimal numbers (`1:30`) stay strings. The reader below resolves scalars with the same rules.

What the CLI refuses (a key written twice in one mapping) and what would hang or crash any reader
(nesting far deeper than a stack needs, aliases that expand without bound, huge files, bytes that
are not UTF-8) is reported as a config problem at its key path, before anything runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from config.errors import Problem, join_path
from config.stack_file.yaml_keys import non_string_keys

MAX_FILE_BYTES = 8 * 2**20
"""A 10,000-node stack written with node ranges is tens of kilobytes."""
MAX_DEPTH = 64
"""The deepest stack config (six topology tiers of nested domains) is about 20 levels."""
MAX_VALUES = 2_000_000
"""Scalars and collections after expanding every alias; beyond this an alias bomb is assumed."""

FILE_PATH = "(stack file)"

_TAG = "tag:yaml.org,2002:"
NULL, BOOL, INT, FLOAT, STR, MERGE = (_TAG + t for t in ("null", "bool", "int", "float", "str", "merge"))

_SPECIAL: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, float("nan"))),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, float("inf"))),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, float("-inf"))),
    "<<": (MERGE, "<<"),
}
# Go's strconv.ParseInt(s, 0, 64): sign, then a base prefix or a leading-zero octal.
_GO_INT = re.compile(r"^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_DOT_FLOAT = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")
_INT64 = 2**63
# A plain number with a leading zero: go-yaml reads `0600` as octal 384 and `08` as the float 8, rarely
# what the writer of a duration, a port or a count meant.
_LEADING_ZERO = re.compile(r"^[+-]?0[0-9_]*[0-9]$")


def _go_int(plain: str) -> int | None:
    match = _GO_INT.match(plain)
    if not match:
        return None
    sign, digits = match.groups()
    prefix = digits[:2].lower()
    base = {"0x": 16, "0o": 8, "0b": 2}.get(prefix)
    body = digits[2:] if base else digits
    if base is None:
        base = 8 if len(digits) > 1 and digits.startswith("0") else 10
    if len(body.lstrip("0")) > 64:  # beyond 64 bits in any base (and before Python's digit limit)
        return None
    value = int(body, base) * (-1 if sign == "-" else 1)
    if -_INT64 <= value < _INT64:
        return value
    if not sign and value < 2 * _INT64:  # ParseUint takes what ParseInt cannot, without a sign
        return value
    return None


def resolve_scalar(text: str) -> tuple[str, Any]:
    """(tag, value) of a plain scalar, as go-yaml v3 resolves it into an untyped value."""
    if text in _SPECIAL:
        return _SPECIAL[text]
    first = text[:1]
    if first == ".":
        if _DOT_FLOAT.match(text):
            return _finite_or_text(float(text), text)
    elif first and first in "+-0123456789":
        plain = text.replace("_", "")
        as_int = _go_int(plain)
        if as_int is not None:
            return INT, as_int
        if _GO_FLOAT.match(plain):
            return _finite_or_text(float(plain), text)
    return STR, text


def _finite_or_text(value: float, text: str) -> tuple[str, Any]:
    """A number out of float64's range (`1e400`, an integer of 400 digits) is text to go-yaml:
    Go's ParseFloat fails with a range error and the resolver falls back to a string."""
    return (FLOAT, value) if math.isfinite(value) else (STR, text)


class _CliResolver(yaml.resolver.BaseResolver):
    """Plain scalars resolve as go-yaml v3 resolves them; quoted scalars are strings."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            return resolve_scalar(value)[0]
        return super().resolve(kind, value, implicit)


class _CliConstructor(yaml.constructor.SafeConstructor):
    def _scalar(self, node: Any, tag: str) -> Any:
        resolved_tag, value = resolve_scalar(self.construct_scalar(node))
        if resolved_tag != tag:
            raise yaml.constructor.ConstructorError(
                None, None, f"`{node.value}` is not a valid {tag.removeprefix(_TAG)}", node.start_mark
            )
        return value

    def construct_yaml_null(self, node: Any) -> Any:
        return self._scalar(node, NULL)

    def construct_yaml_bool(self, node: Any) -> Any:
        return self._scalar(node, BOOL)

    def construct_yaml_int(self, node: Any) -> Any:
        return self._scalar(node, INT)

    def construct_yaml_float(self, node: Any) -> Any:
        return self._scalar(node, FLOAT)

    def construct_yaml_timestamp(self, node: Any) -> Any:
        # go-yaml hands timestamps to untyped values as the text written.
        return self.construct_scalar(node)


for _tag, _method in (
    (NULL, _CliConstructor.construct_yaml_null),
    (BOOL, _CliConstructor.construct_yaml_bool),
    (INT, _CliConstructor.construct_yaml_int),
    (FLOAT, _CliConstructor.construct_yaml_float),
    (_TAG + "timestamp", _CliConstructor.construct_yaml_timestamp),
):
    _CliConstructor.add_constructor(_tag, _method)  # type: ignore[type-var]

_Parser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)  # libyaml when PyYAML was built with it


if _Parser is not None:

    class _CliLoader(_Parser, _CliConstructor, _CliResolver):
        def __init__(self, stream: str) -> None:
            _Parser.__init__(self, stream)
            _CliConstructor.__init__(self)
            _CliResolver.__init__(self)

else:  # pragma: no cover - PyYAML without libyaml

    class _CliLoader(  # type: ignore[no-redef]
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,
        yaml.composer.Composer,
        _CliConstructor,
        _CliResolver,
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _CliConstructor.__init__(self)
            _CliResolver.__init__(self)


@dataclass
class _Frame:
    """An open mapping or sequence while scanning events."""

    path: tuple[object, ...]
    mapping: bool
    anchor: str | None
    line: int
    size: int = 1
    keys: dict[str, int] = field(default_factory=dict)
    """Mappings: key text -> line it was first written on."""
    key: str | None = None
    """Mappings: the key whose value comes next (None: a key comes next)."""
    index: int = 0


_PLAIN_TAGS = frozenset({"!", *(_TAG + t for t in ("str", "int", "float", "bool", "null", "map", "seq"))})
"""Explicit tags of the JSON types; every other tag (`!!set`, `!!binary`, `!!omap`, `!custom`) is refused."""


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


class StackYamlError(Exception):
    """The file cannot be read as the CLI would read it; `problems` say where and why."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


KeyPath = tuple[object, ...]


def _scan(text: str, display: Any) -> Iterator[Problem]:
    """One pass over the event stream: duplicate keys, depth and expanded size, with key paths.
    Stops at the first depth or size problem (what follows could be unbounded)."""
    stack: list[_Frame] = []
    anchors: dict[str, int] = {}
    total = 0

    def child_path() -> KeyPath:
        if not stack:
            return ()
        parent = stack[-1]
        return (*parent.path, parent.key if parent.mapping else parent.index)

    def finished(size: int) -> None:
        """A complete value of `size` was read in the innermost open collection."""
        if not stack:
            return
        parent = stack[-1]
        parent.size += size
        if parent.mapping:
            parent.key = None
        else:
            parent.index += 1

    events = yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    while True:
        try:
            event = next(events)
        except StopIteration:
            return
        except yaml.YAMLError as error:
            # libyaml looks ahead in flow collections and may hit its own depth limit first.
            if "nesting depth" not in str(error):
                raise
            yield Problem(
                display(child_path()),
                f"values are nested more than {MAX_DEPTH} levels deep{_mark_line(error)}",
                "no stack config needs this depth; check the brackets and indentation",
            )
            return
        if not isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frame = stack.pop()
                if frame.anchor:
                    anchors[frame.anchor] = frame.size
                finished(frame.size)
            continue
        mark: Any = event.start_mark
        line = mark.line + 1
        parent = stack[-1] if stack else None
        if parent is not None and parent.mapping and parent.key is None:
            if not isinstance(event, yaml.ScalarEvent):
                yield Problem(
                    display(parent.path),
                    f"a mapping key on line {line} is not a plain value",
                    "use plain text keys",
                )
                return
            key = event.value
            if key in parent.keys and key != "<<":
                yield Problem(
                    display((*parent.path, key)),
                    f"key `{key}` is written twice (lines {parent.keys[key]} and {line}); the Pulumi CLI "
                    "refuses the file, and a reader that keeps the last one would silently drop the first",
                    "merge the two entries into one",
                )
            parent.keys.setdefault(key, line)
            parent.key = key
            total += 1
            continue
        path = child_path()
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in _PLAIN_TAGS:
            yield Problem(
                display(path),
                f"`{_short_tag(tag)}` (line {line}) is a YAML type that stack config cannot hold: the Pulumi CLI "
                "passes config to programs as JSON (strings, numbers, booleans, lists and mappings)",
                "remove the tag and write the value as a plain string, list or mapping",
            )
            return
        if isinstance(event, yaml.AliasEvent):
            if any(frame.anchor == event.anchor for frame in stack):
                # go-yaml refuses it too ("anchor value contains itself"); expanded, it never ends.
                yield Problem(
                    display(path),
                    f"alias `*{event.anchor}` (line {line}) refers to the value it is part of",
                    "write the value out instead of referring to itself",
                )
                return
            size = anchors.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
        else:
            if len(stack) >= MAX_DEPTH:
                yield Problem(
                    display(path),
                    f"values are nested more than {MAX_DEPTH} levels deep (line {line})",
                    "no stack config needs this depth; check the brackets and indentation",
                )
                return
            stack.append(_Frame(path, isinstance(event, yaml.MappingStartEvent), event.anchor, line))
            total += 1
            continue
        if isinstance(event, yaml.ScalarEvent) and not event.style and _LEADING_ZERO.match(event.value):
            yield _leading_zero(display(path), event.value, line)
        if isinstance(event, yaml.ScalarEvent) and event.anchor:
            anchors[event.anchor] = 1
        total += size
        if total > MAX_VALUES:
            yield Problem(
                display(path),
                f"aliases expand to more than {MAX_VALUES:,} values (line {line})",
                "write the values out, or use fewer nested aliases",
            )
            return
        finished(size)


def _leading_zero(where: str, text: str, line: int) -> Problem:
    read = resolve_scalar(text)[1]
    digits = text.lstrip("+-").replace("_", "").lstrip("0") or "0"
    octal = isinstance(read, int)
    spellings = [f"`{int(read)}` for the number the CLI reads"]
    if octal:
        spellings.append(f"`{'-' if text.startswith('-') else ''}0o{digits}` to keep it octal")
    spellings.append(f'`"{text}"` (quoted) for text')
    return Problem(
        where,
        f"`{text}` (line {line}) has a leading zero, so the Pulumi CLI reads it as {read!r}"
        + (" (octal)" if octal else ""),
        "write " + ", ".join(spellings[:-1]) + " or " + spellings[-1],
    )


def _mark_line(error: yaml.YAMLError) -> str:
    mark: Any = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    if mark is None:
        return ""
    return f" at line {mark.line + 1}, column {mark.column + 1}"


def read_yaml(data: bytes, display: Any = lambda path: join_path(*path) or FILE_PATH) -> Any:
    """Decode a stack or project file as the Pulumi CLI would. `display` turns a key path (a tuple
    of keys and indexes) into the path shown to users. Raises StackYamlError."""
    if len(data) > MAX_FILE_BYTES:
        raise StackYamlError(
            [
                Problem(
                    FILE_PATH,
                    f"the file is {len(data):,} bytes, more than the {MAX_FILE_BYTES:,} bytes a stack file may have",
                    "describe nodes with ranges such as `gpu-[001-512]` instead of listing them",
                )
            ]
        )
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise StackYamlError(
            [
                Problem(
                    FILE_PATH,
                    f"the file is not UTF-8 (byte 0x{data[error.start]:02x} on line {line})",
                    "save it as UTF-8, as the Pulumi CLI expects",
                )
            ]
        ) from None
    try:
        problems = list(_scan(text, display))
        if problems:
            raise StackYamlError(problems)
        loader = _CliLoader(text)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
        problems = list(non_string_keys(data, lambda path: display(path) or FILE_PATH))
        if problems:
            raise StackYamlError(problems)
        return data
    except yaml.YAMLError as error:
        reason = getattr(error, "problem", None) or str(error)
        raise StackYamlError(
            [Problem(FILE_PATH, f"not valid YAML{_mark_line(error)}: {reason}", "fix the YAML syntax")]
        ) from None


def load_yaml_text(text: str) -> Any:
    """Parse trusted YAML (vendored schemas, renders) quickly with libyaml when available."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_all_yaml_text(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
