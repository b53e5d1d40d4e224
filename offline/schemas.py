"""Schema validation of rendered objects.

Kubernetes built-ins are checked with `kubernetes-validate` (strict: unknown fields are errors).
Volcano and LeaderWorkerSet objects are checked against the upstream CRDs in
`../shared/upstream/` (or `$VOLCANO_PLATFORM_UPSTREAM`), including their CEL rules, and unknown
fields count as errors too: the API server would silently prune them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from config.names import dns_1035_problem, dns_subdomain_problem
from offline.manifests import RenderedObject

PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class SchemaIssue:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path or '(object)'}: {self.message}"


def upstream_dir() -> Path | None:
    """Where the verbatim upstream CRDs and chart values are, if anywhere."""
    env = os.environ.get("VOLCANO_PLATFORM_UPSTREAM")
    candidates = [Path(env)] if env else []
    candidates += [parent / "shared" / "upstream" for parent in PROJECT_DIR.parents]
    for candidate in candidates:
        if (candidate / "volcano" / "crd").is_dir():
            return candidate
    return None


@cache
def crd_schemas(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every CRD under `root`."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(root.rglob("crd/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                schema = version.get("schema", {}).get("openAPIV3Schema")
                if schema:
                    schemas[(f"{group}/{version['name']}", kind)] = _structural(schema)
    return schemas


def _structural(schema: Any) -> Any:
    """Make the API server's pruning explicit: objects with declared properties accept nothing
    else unless they preserve unknown fields."""
    if isinstance(schema, list):
        return [_structural(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _structural(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@lru_cache(maxsize=256)
def _cel_program(rule: str) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(rule))


def _cel_keyword(validator: Any, rules: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema keyword for `x-kubernetes-validations` (CEL rules on `self`)."""
    import celpy
    from jsonschema.exceptions import ValidationError

    for rule in rules:
        try:
            result = _cel_program(rule["rule"]).evaluate({"self": celpy.json_to_cel(instance)})
        except Exception as exc:  # a rule that cannot be evaluated is reported, not ignored
            yield ValidationError(f"CEL rule `{rule['rule']}` could not be evaluated: {exc}")
            continue
        if not bool(result):
            yield ValidationError(rule.get("message") or f"CEL rule `{rule['rule']}` failed")


@lru_cache(maxsize=1)
def _validator_class() -> Any:
    from jsonschema import Draft7Validator, validators

    return validators.extend(Draft7Validator, {"x-kubernetes-validations": _cel_keyword})


def validate_custom(obj: RenderedObject, schema: dict[str, Any]) -> list[SchemaIssue]:
    validator = _validator_class()(schema)
    issues = [
        SchemaIssue(obj.file, ".".join(str(p) for p in error.absolute_path), error.message)
        for error in sorted(validator.iter_errors(obj.manifest), key=lambda e: list(map(str, e.absolute_path)))
    ]
    name = obj.name
    problem = dns_1035_problem(name) if obj.kind == "LeaderWorkerSet" else dns_subdomain_problem(name)
    if problem:
        issues.append(SchemaIssue(obj.file, "metadata.name", f"`{name}` {problem}"))
    return issues


def validate_builtin(obj: RenderedObject, kubernetes_version: str) -> list[SchemaIssue]:
    import kubernetes_validate

    try:
        kubernetes_validate.validate(obj.manifest, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [SchemaIssue(obj.file, ".".join(str(p) for p in error.path), error.message)]
    except kubernetes_validate.SchemaNotFoundError:
        return [
            SchemaIssue(obj.file, "", f"no Kubernetes {kubernetes_version} schema for {obj.api_version} {obj.kind}")
        ]
    return []


@dataclass
class SchemaReport:
    issues: list[SchemaIssue]
    checked: int
    skipped: list[str]
    """Why some objects were not checked (e.g. the upstream CRDs are not available)."""


def validate_objects(objects: list[RenderedObject], kubernetes_version: str) -> SchemaReport:
    root = upstream_dir()
    schemas = crd_schemas(root) if root else {}
    issues: list[SchemaIssue] = []
    skipped: set[str] = set()
    checked = 0
    for obj in objects:
        group = obj.api_version.split("/")[0] if "/" in obj.api_version else ""
        if "." in group and not group.endswith(".k8s.io"):
            schema = schemas.get((obj.api_version, obj.kind))
            if schema is None:
                skipped.add(
                    f"{obj.api_version} {obj.kind}: "
                    + (
                        "no upstream CRD found (set VOLCANO_PLATFORM_UPSTREAM to the folder with the CRDs)"
                        if root is None
                        else "no CRD for this kind in " + str(root)
                    )
                )
                continue
            issues += validate_custom(obj, schema)
        else:
            issues += validate_builtin(obj, kubernetes_version)
        checked += 1
    return SchemaReport(issues, checked, sorted(skipped))
