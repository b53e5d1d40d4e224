"""Schema validation of rendered objects.

Kubernetes built-ins are checked with `kubernetes-validate`'s schemas (strict: unknown fields are
errors), one compiled validator per kind. Volcano and LeaderWorkerSet objects are checked against
the CRDs vendored in `upstream/` for the versions the stack pins (prometheus-operator, KEDA, Gateway
API and inference extension objects against the newest vendored version: the stack does not install
those), including their CEL rules, and unknown fields count as errors too: the API server would
silently prune them. A rendered custom kind without a vendored CRD is an error, never a skip.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from config.schema.names import dns_1035_problem, dns_subdomain_problem
from config.spec.platform import PlatformSpec
from config.stack_file.yaml12 import StackYamlError, load_all_yaml_text, read_yaml
from config.upstream.lws import LWS_DEFAULT_VERSION
from config.upstream.vendored import (
    GATEWAY_API,
    GATEWAY_API_INFERENCE_EXTENSION,
    ISTIO,
    KEDA,
    LWS,
    PROMETHEUS_ENGINE,
    PROMETHEUS_OPERATOR,
    PULUMI,
    VOLCANO,
    fetch_command,
    newest_vendored,
    vendored_dir,
    vendored_versions,
)
from config.upstream.volcano import VOLCANO_DEFAULT_VERSION
from offline.manifests import RenderedObject


@dataclass(frozen=True)
class SchemaIssue:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path or '(object)'}: {self.message}"


def schema_dirs(spec: PlatformSpec) -> dict[str, Path | None]:
    """`<project> <version>` -> its vendored folder (None when not vendored), for the upstream
    projects whose objects or chart values the stack renders."""
    return {
        f"{VOLCANO} {spec.config.volcano.version}": vendored_dir(VOLCANO, spec.config.volcano.version),
        f"{LWS} {spec.config.lws.version}": vendored_dir(LWS, spec.config.lws.version),
        **_external_schema_dirs(),
    }


def _external_schema_dirs() -> dict[str, Path | None]:
    """prometheus-operator, Managed Service for Prometheus, KEDA, the inference extension, Gateway API
    and Istio: the stack renders their objects but installs none of them, so it validates against
    the newest version vendored."""
    out: dict[str, Path | None] = {}
    for project in (PROMETHEUS_OPERATOR, PROMETHEUS_ENGINE, KEDA, GATEWAY_API_INFERENCE_EXTENSION, GATEWAY_API, ISTIO):
        newest = newest_vendored(project)
        if newest is not None:
            out[f"{project} {newest[0]}"] = newest[1]
    return out


@cache
def _crd_schemas_in(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(directory.glob("crd/*.yaml")):
        for doc in load_all_yaml_text(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                schema = version.get("schema", {}).get("openAPIV3Schema")
                if schema:
                    schemas[(f"{group}/{version['name']}", kind)] = _structural(_with_object_meta(schema))
    return schemas


@cache
def _crd_names_in(directory: Path) -> dict[tuple[str, str], tuple[str, bool]]:
    names: dict[tuple[str, str], tuple[str, bool]] = {}
    for path in sorted(directory.glob("crd/*.yaml")):
        for doc in load_all_yaml_text(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                names[(spec["group"], spec["names"]["kind"])] = (spec["names"]["plural"], spec["scope"] == "Namespaced")
    return names


def crd_names(directories: Iterable[Path]) -> dict[tuple[str, str], tuple[str, bool]]:
    """(group, kind) -> (plural resource name, namespaced) of every vendored CRD in `directories`."""
    out: dict[tuple[str, str], tuple[str, bool]] = {}
    for directory in directories:
        out.update(_crd_names_in(directory))
    return out


def crd_schemas(directories: Iterable[Path]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every vendored CRD in `directories`."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for directory in directories:
        out.update(_crd_schemas_in(directory))
    return out


def _with_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """A custom object's `apiVersion`, `kind` and `metadata`, which the API server admits whether
    or not the CRD's schema names them (kubebuilder's CRDs do, Istio's do not)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    implicit = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
    return {**schema, "properties": {**implicit, **properties}}


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


def _defaulted(instance: Any, schema: Any) -> Any:
    """`instance` with the schema's defaults filled in, as the API server defaults a custom object
    before it validates it (a default inside a default included; `null` in a field that is not
    `nullable` is dropped and defaulted). CEL rules count on it: Gateway API's read `p.kind`, which
    only a default sets."""
    if isinstance(instance, dict) and isinstance(schema, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out = {}
        for key, value in instance.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else {})
            if not (value is None and "default" in sub and not sub.get("nullable")):
                out[key] = _defaulted(value, sub)
        for key, sub in properties.items():
            if key not in out and "default" in sub:
                out[key] = _defaulted(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(instance, list) and isinstance(schema, dict):
        return [_defaulted(item, schema.get("items", {})) for item in instance]
    return instance


# How a rule names a property (k8s.io/apiserver v0.35.2 pkg/cel/escaping.go): a CEL reserved word
# is `__<word>__` (`self.__namespace__`), and `__`, `.`, `-`, `/` in a name are `__underscores__`,
# `__dot__`, `__dash__`, `__slash__`. Keys of a map (`additionalProperties`) are not escaped.
_CEL_RESERVED = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if"}
    | {"import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
)
_CEL_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_CEL_ESCAPED = re.compile(r"__|[-./]")
_OLD_SELF = re.compile(r"\boldSelf\b")


def _cel_property(name: str) -> str:
    if name in _CEL_RESERVED:
        return f"__{name}__"
    return _CEL_ESCAPED.sub(lambda m: _CEL_ESCAPES[m.group()], name)


def _cel_view(instance: Any, schema: Any) -> Any:
    """`instance` as a CEL rule sees it: declared properties under their escaped names."""
    if isinstance(instance, dict) and isinstance(schema, dict):
        properties = schema.get("properties")
        if properties:
            return {_cel_property(k): _cel_view(v, properties.get(k, {})) for k, v in instance.items()}
        extra = schema.get("additionalProperties")
        return {k: _cel_view(v, extra) for k, v in instance.items()} if isinstance(extra, dict) else instance
    if isinstance(instance, list) and isinstance(schema, dict):
        return [_cel_view(item, schema.get("items", {})) for item in instance]
    return instance


def _cel_split(text: Any, separator: Any) -> Any:
    """Kubernetes' CEL strings library: `'a/b'.split('/')` (Gateway API's label and annotation keys)."""
    from celpy import celtypes

    return celtypes.ListType([celtypes.StringType(part) for part in str(text).split(str(separator))])


def _cel_equal(left: Any, right: Any) -> Any:
    """CEL's heterogeneous equality, as cel-go (the API server's CEL) has it: values of different
    types are unequal, numbers compare across int, uint and double (cel-spec `langdef.md`,
    Equality). celpy refuses the mixed case, which an int-or-string field (a port by name, checked
    `self != 0`) reaches."""
    from celpy import celtypes, evaluation

    numbers = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)
    if type(left) is not type(right) and not (isinstance(left, numbers) and isinstance(right, numbers)):
        return celtypes.BoolType(False)
    return evaluation.bool_eq(left, right)


def _cel_not_equal(left: Any, right: Any) -> Any:
    from celpy import celtypes

    return celtypes.BoolType(not _cel_equal(left, right))


@lru_cache(maxsize=256)
def _cel_program(rule: str) -> Any:
    import celpy

    env = celpy.Environment()
    functions = {"split": _cel_split, "_==_": _cel_equal, "_!=_": _cel_not_equal}
    return env.program(env.compile(rule), functions=functions)


def _cel_keyword(validator: Any, rules: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema keyword for `x-kubernetes-validations` (CEL rules on `self`). A transition rule
    (one that reads `oldSelf`) is left out: the API server runs it on updates only, against the
    object stored, which a render does not have."""
    import celpy
    from jsonschema.exceptions import ValidationError

    view = None
    for rule in rules:
        if _OLD_SELF.search(rule["rule"]):
            continue
        try:
            if view is None:
                view = celpy.json_to_cel(_cel_view(instance, schema))
            result = _cel_program(rule["rule"]).evaluate({"self": view})
        except Exception as exc:  # a rule that cannot be evaluated is reported, not ignored
            yield ValidationError(f"CEL rule `{rule['rule']}` could not be evaluated: {exc}")
            continue
        if not bool(result):
            yield ValidationError(rule.get("message") or f"CEL rule `{rule['rule']}` failed")


@lru_cache(maxsize=1)
def _validator_class() -> Any:
    from jsonschema import Draft7Validator, validators

    return validators.extend(Draft7Validator, {"x-kubernetes-validations": _cel_keyword})


_compiled: dict[int, tuple[dict[str, Any], Any]] = {}


def _custom_validator(schema: dict[str, Any]) -> Any:
    """One compiled validator per CRD schema (the schemas themselves are cached per folder)."""
    entry = _compiled.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _compiled[id(schema)] = (schema, _validator_class()(schema))
    return entry[1]


def _issues(obj: RenderedObject, validator: Any, instance: Any) -> list[SchemaIssue]:
    return [
        SchemaIssue(obj.file, ".".join(str(p) for p in error.absolute_path), error.message)
        for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    ]


def validate_custom(obj: RenderedObject, schema: dict[str, Any]) -> list[SchemaIssue]:
    issues = _issues(obj, _custom_validator(schema), _defaulted(obj.manifest, schema))
    name = obj.name
    problem = dns_1035_problem(name) if obj.kind == "LeaderWorkerSet" else dns_subdomain_problem(name)
    if problem:
        issues.append(SchemaIssue(obj.file, "metadata.name", f"`{name}` {problem}"))
    return issues


@lru_cache(maxsize=128)
def _builtin_validator(kubernetes_version: str, api_version: str, kind: str) -> Any:
    """kubernetes-validate's strict schema for one kind, compiled once (the library itself
    re-reads its definitions file for every object)."""
    from jsonschema.validators import Draft202012Validator
    from kubernetes_validate.utils import all_versions, major_minor, schema_contents
    from referencing import Registry, Resource

    version = [v for v in all_versions() if major_minor(v) <= major_minor(kubernetes_version)][-1]
    schema_dir = f"kubernetes-json-schema/v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_contents(f"{schema_dir}/{kind.lower()}-{group_version}.json", kubernetes_version)
    except FileNotFoundError:
        return None
    definitions = schema_contents(f"{schema_dir}/_definitions.json", kubernetes_version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return Draft202012Validator(schema, registry=registry)


def validate_builtin(obj: RenderedObject, kubernetes_version: str) -> list[SchemaIssue]:
    validator = _builtin_validator(kubernetes_version, obj.api_version, obj.kind)
    if validator is None:
        return [
            SchemaIssue(obj.file, "", f"no Kubernetes {kubernetes_version} schema for {obj.api_version} {obj.kind}")
        ]
    error = next(iter(sorted(validator.iter_errors(obj.manifest), key=lambda e: list(map(str, e.path)))), None)
    return [] if error is None else [SchemaIssue(obj.file, ".".join(str(p) for p in error.path), error.message)]


def is_custom(api_version: str, crd_groups: Iterable[str] = ()) -> bool:
    """Whether a CRD defines the kind: its group is one of `crd_groups` (the vendored CRDs'), or is
    no Kubernetes group (those have no dot, `apps`, or end in `.k8s.io`; approved CRDs such as
    Gateway API's `gateway.networking.k8s.io` do too, hence the vendored groups first)."""
    group = api_version.split("/")[0] if "/" in api_version else ""
    return group in crd_groups or ("." in group and not group.endswith(".k8s.io"))


@dataclass
class SchemaReport:
    issues: list[SchemaIssue]
    checked: int


def default_schema_dirs() -> dict[str, Path | None]:
    """The vendored folders of the versions the program pins by default."""
    return {
        f"{VOLCANO} {VOLCANO_DEFAULT_VERSION}": vendored_dir(VOLCANO, VOLCANO_DEFAULT_VERSION),
        f"{LWS} {LWS_DEFAULT_VERSION}": vendored_dir(LWS, LWS_DEFAULT_VERSION),
        **_external_schema_dirs(),
    }


def validate_objects(
    objects: list[RenderedObject], kubernetes_version: str, dirs: dict[str, Path | None] | None = None
) -> SchemaReport:
    """Validate every object; `dirs` are the vendored folders of the stack's upstream versions
    (`schema_dirs(spec)`; default: the versions the program pins)."""
    dirs = default_schema_dirs() if dirs is None else dirs
    schemas = crd_schemas(d for d in dirs.values() if d is not None)
    crd_groups = {api_version.split("/")[0] for api_version, _ in schemas}
    issues: list[SchemaIssue] = []
    checked = 0
    for obj in objects:
        if is_custom(obj.api_version, crd_groups):
            schema = schemas.get((obj.api_version, obj.kind))
            if schema is None:
                missing = [f"`{name}`: `{fetch_command(*name.split())}`" for name, d in dirs.items() if d is None]
                issues.append(
                    SchemaIssue(
                        obj.file,
                        "",
                        f"no vendored CRD defines {obj.api_version} {obj.kind}"
                        + ("; not vendored: " + ", ".join(missing) if missing else ""),
                    )
                )
                continue
            issues += validate_custom(obj, schema)
        else:
            issues += validate_builtin(obj, kubernetes_version)
        checked += 1
    return SchemaReport(issues, checked)


def validate_project_file(path: Path) -> list[SchemaIssue]:
    """`Pulumi.yaml` against Pulumi's own project schema (the newest vendored), as the CLI
    validates it before running anything."""
    import json

    from jsonschema import Draft202012Validator

    versions = vendored_versions(PULUMI)
    if not versions:
        return [SchemaIssue(path.name, "", f"no Pulumi project schema is vendored; `{fetch_command(PULUMI, 'X.Y.Z')}`")]
    directory = vendored_dir(PULUMI, versions[-1])
    assert directory is not None
    schema = json.loads((directory / "project.json").read_text())
    try:
        document = read_yaml(path.read_bytes())
    except StackYamlError as error:
        return [SchemaIssue(path.name, p.path, p.message) for p in error.problems]
    validator = Draft202012Validator(schema)
    return [
        SchemaIssue(path.name, ".".join(str(p) for p in error.absolute_path), error.message)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]
