"""JSON Schema of stack files, and the configuration reference, both generated from the models.

`python -m config.schema` (or `make schema`) rewrites `schema/pulumi-stack.schema.json` and
`docs/configuration.md`; tests fail when either is stale. Editors that understand
`# yaml-language-server: $schema=...` then complete and check stack files as they are typed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from config.project import PROJECT
from config.schema.base import SCHEMA_DOCS_VARIABLE
from config.schema.reference import reference_markdown
from config.sections.stack import TOP_LEVEL_KEYS, StackConfig

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "schema" / "pulumi-stack.schema.json"
INCLUDE_SCHEMA_FILE = ROOT / "schema" / "pulumi-stack-include.schema.json"
REFERENCE_FILE = ROOT / "docs" / "configuration.md"

_SECURE = {
    "type": "object",
    "properties": {"secure": {"type": "string"}},
    "required": ["secure"],
    "additionalProperties": False,
    "description": "An encrypted value written by `pulumi config set --secret`.",
}


def _allow_secure(node: Any) -> Any:
    """Secret fields accept Pulumi's `{secure: ...}` form as well as plain text."""
    if isinstance(node, dict):
        if node.get("format") == "password":
            return {"anyOf": [{k: v for k, v in node.items() if k not in ("format", "writeOnly")}, _SECURE]}
        return {k: _allow_secure(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_allow_secure(v) for v in node]
    return node


def _merged_defs(defs: dict[str, Any], name: str) -> set[str]:
    """Models reachable from `name` through mapping-valued fields: the ones `modelDefaults` merges
    into key by key (list items are replaced whole, so they keep their required keys)."""
    found: set[str] = set()

    def refs(node: Any) -> list[str]:
        if not isinstance(node, dict):
            return []
        if "$ref" in node:
            return [node["$ref"].split("/")[-1]]
        return [r for option in node.get("anyOf", []) for r in refs(option)]

    pending = [name]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.add(current)
        for prop in defs[current].get("properties", {}).values():
            pending += refs(prop)
    return found


def stack_file_schema() -> dict[str, Any]:
    config_schema = _allow_secure(StackConfig.model_json_schema(by_alias=True, ref_template="#/$defs/{model}"))
    defs = config_schema.pop("$defs", {})
    # A model's keys may come from `modelDefaults`, so no key of a model is required on its own.
    for name in _merged_defs(defs, "ModelConfig"):
        defs[name].pop("required", None)
    config_schema["properties"]["modelDefaults"] = {
        "$ref": "#/$defs/ModelConfig",
        "description": config_schema["properties"]["modelDefaults"].get("description", ""),
    }
    properties = {f"{PROJECT}:{key}": value for key, value in config_schema["properties"].items()}
    known = "|".join(TOP_LEVEL_KEYS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{PROJECT} stack file (Pulumi.<stack>.yaml)",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "description": config_schema.get("description", ""),
                "properties": properties,
                # Other namespaces (kubernetes:, pulumi:) pass through; unknown project keys do not.
                "patternProperties": {f"^{PROJECT}:(?!({known})$)": False},
            },
            "encryptionsalt": {"type": "string"},
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "environment": {},
        },
        "$defs": defs,
    }


def include_file_schema() -> dict[str, Any]:
    """Files named by `include`: the stack's keys without the project prefix, except `secrets`
    (encrypted values live in the stack file) and `include` (files do not include files)."""
    stack = stack_file_schema()
    properties = {
        key.removeprefix(f"{PROJECT}:"): value
        for key, value in stack["properties"]["config"]["properties"].items()
        if key.removeprefix(f"{PROJECT}:") not in ("secrets", "include")
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{PROJECT} included file (`include.files`, `include.tenants`)",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "$defs": stack["$defs"],
    }


def schema_text() -> str:
    return json.dumps(stack_file_schema(), indent=2, sort_keys=True) + "\n"


def include_schema_text() -> str:
    return json.dumps(include_file_schema(), indent=2, sort_keys=True) + "\n"


def main() -> int:
    if os.environ.get(SCHEMA_DOCS_VARIABLE) != "1":  # the models were built without their docstrings
        command = [sys.executable, "-m", "config.schema", *sys.argv[1:]]
        os.execve(sys.executable, command, {**os.environ, SCHEMA_DOCS_VARIABLE: "1"})
    SCHEMA_FILE.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_FILE.write_text(schema_text())
    INCLUDE_SCHEMA_FILE.write_text(include_schema_text())
    REFERENCE_FILE.parent.mkdir(parents=True, exist_ok=True)
    REFERENCE_FILE.write_text(reference_markdown())
    print(
        f"wrote {SCHEMA_FILE.relative_to(ROOT)}, {INCLUDE_SCHEMA_FILE.relative_to(ROOT)} and "
        f"{REFERENCE_FILE.relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
