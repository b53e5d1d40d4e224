"""The configuration reference (`docs/configuration.md`), generated from the models' JSON Schema,
so every key, type, default and description in the docs is the one the program validates."""

from __future__ import annotations

import json
from typing import Any

from config.project import PROJECT
from config.sections.stack import StackConfig

HEADER = f"""# Configuration reference

Every key a stack file (`Pulumi.<stack>.yaml`) can set, under `{PROJECT}:<key>`. Generated from
the config models by `make schema`; a test fails when this file is out of date. Keys are
camelCase; `<name>` stands for a key you choose (a tenant, a model, a domain...). A key that is
not listed here is an error, reported with the closest valid key.

Every optional key has the default shown, so a stack file states only what differs from it.
Settings that several models of a stack share go once in `modelDefaults`, which is merged under
every model (a model's own values win; mappings merge key by key).

Editors that read `# yaml-language-server: $schema=./schema/pulumi-stack.schema.json` (the first
line of the example stacks) complete and check these keys as you type.

Stack files are read the way the Pulumi CLI reads them (YAML 1.2 scalars): `yes`, `no`, `on` and
`off` are strings, so booleans are written `true` and `false`; `1:30` is a string. A plain number
with a leading zero (`0600`, `08`) is refused: the CLI reads `0600` as the octal number 384 and `08`
as 8.0, rarely what a duration, port or count meant; write the number, `0o600` for octal, or quote
it for text. A key written twice in one mapping, or a section written both as `models` and
`volcano-platform:models`, is an error. Keys under another namespace that look meant for this
program (`volcano:cluster`) and `kubernetes:*` keys (the program's Kubernetes provider is built from
`cluster` and ignores them) are errors too. Numbers with a fraction that `pulumi config set --path`
stored as strings (`"0.9"`) are read as numbers; `--type float` stores them typed.
"""


def _deref(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = {**defs[node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _variants(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The non-null alternatives of a node (`X | None` is just X)."""
    options = node.get("anyOf") or node.get("oneOf")
    if not options:
        return [_deref(node, defs)]
    return [_deref(o, defs) for o in options if o.get("type") != "null"]


def _type_name(node: dict[str, Any], defs: dict[str, Any]) -> str:
    if node.get("description", "").startswith("Kubernetes quantity"):
        return "quantity"
    names = []
    for variant in _variants(node, defs):
        if "enum" in variant:
            names.append(" \\| ".join(f"`{v}`" for v in variant["enum"]))
        elif "const" in variant:
            names.append(f"`{variant['const']}`")
        elif variant.get("properties") is not None:
            names.append("object")
        elif variant.get("type") == "array":
            names.append(f"list of {_type_name(variant.get('items', {}), defs)}")
        elif variant.get("type") == "object":
            values = variant.get("additionalProperties")
            names.append(f"map of {_type_name(values, defs)}" if isinstance(values, dict) else "mapping")
        elif "anyOf" in variant:
            names.append(_type_name(variant, defs))
        elif variant.get("format") == "password":
            names.append("secret string")
        elif variant.get("description", "").startswith("Kubernetes quantity"):
            names.append("quantity")
        else:
            names.append(str(variant.get("type", "any")))
    unique = list(dict.fromkeys(names))
    return " or ".join(unique)


def _default(node: dict[str, Any]) -> str:
    if "default" not in node:
        return "required"
    value = node["default"]
    if value is None:
        return "unset"
    if isinstance(value, dict) and value:
        return "see below"
    return f"`{json.dumps(value)}`"


def _rows(
    node: dict[str, Any],
    path: str,
    defs: dict[str, Any],
    required: bool,
    out: list[list[str]],
    seen: dict[str, str],
) -> None:
    """One row for `path`, then rows for the keys of any object it holds. `seen` maps the models
    being expanded to their path, so a recursive model (domains within domains) points back."""
    variants = _variants(node, defs)
    description = node.get("description") or next((v.get("description", "") for v in variants), "")
    default = "required" if required else _default(node)
    out.append([f"`{path}`", _type_name(node, defs), default, " ".join(description.split())])

    def expand(model: dict[str, Any], prefix: str) -> None:
        title = model.get("title", "")
        if title in seen:
            out.append([f"`{prefix}...`", "object", "", f"the same keys as `{seen[title]}`"])
            return
        needed = set(model.get("required", []))
        for key, child in model["properties"].items():
            _rows(child, f"{prefix}.{key}", defs, key in needed, out, {**seen, title: prefix})

    for variant in variants:
        if variant.get("properties") is not None:
            expand(variant, path)
        elif variant.get("type") == "object" and isinstance(variant.get("additionalProperties"), dict):
            for inner in _variants(variant["additionalProperties"], defs):
                if inner.get("properties") is not None:
                    expand(inner, f"{path}.<name>")
        elif variant.get("type") == "array":
            for inner in _variants(variant.get("items", {}), defs):
                if inner.get("properties") is not None:
                    expand(inner, f"{path}[]")


def reference_markdown() -> str:
    schema = StackConfig.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    lines = [HEADER]
    for key, node in schema["properties"].items():
        rows: list[list[str]] = []
        if key == "modelDefaults":
            # The keys of a model, none required here: a model states what its defaults leave out.
            _rows({**node, "$ref": "#/$defs/ModelConfig", "type": "object"}, key, defs, False, rows, {})
            rows = [
                rows[0],
                *([cell if i != 2 or cell != "required" else "unset" for i, cell in enumerate(r)] for r in rows[1:]),
            ]
        else:
            _rows(node, key, defs, False, rows, {})
        lines += [f"## `{PROJECT}:{key}`", "", rows[0][3], ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        lines += [
            "| " + " | ".join(cell.replace("|", "\\|") if i != 1 else cell for i, cell in enumerate(row)) + " |"
            for row in rows[1:]
        ]
        lines.append("")
    return "\n".join(lines)
