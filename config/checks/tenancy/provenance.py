"""What the pass over rendered objects knows and reports with: the scope of one render (whose
namespaces, which grants, what the render creates), where an object came from (its tenant file and
model), and the key of that file that wrote a value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from config.errors import Problem, join_path
from config.sections.models import SecretRef
from config.spec.platform import PlatformSpec
from config.spec.secrets import platform_pull_secrets
from config.spec.tenancy.grants import Grant


@dataclass
class Scope:
    """What the pass knows before it looks at objects: namespaces' tenants, their grants, and the
    names the render itself creates per namespace."""

    spec: PlatformSpec
    tenant_of_namespace: dict[str, str]
    grants: dict[str, Grant]
    created: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """(namespace, kind) -> names the render creates there."""
    queues_of: dict[str, set[str]] = field(default_factory=dict)
    """Tenant -> its queue and its queues per accelerator type."""

    def bound(self, tenant: str | None) -> bool:
        return tenant is not None and tenant in self.spec.tenant_files and tenant in self.grants


@dataclass(frozen=True)
class Source:
    """Where a bound object came from: its tenant, the tenant file and the model (if any)."""

    tenant: str
    file: str
    model: str | None

    def at(
        self, scope: Scope, value: object, message: str, fix: str, *, as_key: bool = False, path: str | None = None
    ) -> Problem:
        path = path or written_key(scope.spec, self, value, as_key=as_key)
        return Problem(path, message, fix, got=value if isinstance(value, (str, int)) else None, file=self.file)


def describe(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    namespace = metadata.get("namespace")
    return f"{obj['kind']} `{namespace + '/' if namespace else ''}{metadata.get('name')}`"


def pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(where, template) of every pod an object makes: a Pod itself, a workload's template, a
    LeaderWorkerSet's leader and worker templates."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    if obj["kind"] == "Pod":
        return [("", {"metadata": obj["metadata"], "spec": spec})]
    found: list[tuple[str, Mapping[str, Any]]] = []
    template = spec.get("template")
    if isinstance(template, Mapping):
        found.append((" (its pods)", template))
    group = spec.get("leaderWorkerTemplate")
    if isinstance(group, Mapping):
        for key in ("leaderTemplate", "workerTemplate"):
            if isinstance(group.get(key), Mapping):
                found.append((f" ({key})", group[key]))
    return found


def secret_allowed(scope: Scope, grant: Grant, namespace: str, name: str, *, pull: bool = False) -> bool:
    """Granted, read by the platform's own models there, or (`pull`) a login the platform pulls its
    own images with."""
    return (
        name in grant.secrets
        or name in grant.registries
        or (pull and name in platform_pull_secrets(scope.spec))
        or name in platform_secrets(scope.spec).get(namespace, set())
    )


def platform_secrets(spec: PlatformSpec) -> dict[str, set[str]]:
    """Namespace -> Secrets the platform's own models read there (the platform's choice)."""
    out: dict[str, set[str]] = {}
    for model in spec.models.values():
        if spec.file_of_model(model.name) is not None:
            continue
        envs = [model.config.env, *(view.config.env for view in model.role_views)]
        names = {v.secret for env in envs for v in env.values() if isinstance(v, SecretRef)}
        hub = model.config.source.hub
        if hub is not None and hub.token_secret:
            names.add(hub.token_secret)
        names.update(model.config.image_pull_secrets)
        out.setdefault(model.namespace, set()).update(names)
    return out


def priority_class(scope: Scope, source: Source, grant: Grant, what: str, name: Any) -> Iterator[Problem]:
    if name is not None and name not in grant.priority_classes:
        allowed = ", ".join(f"`{c}`" for c in grant.priority_classes) or "none"
        yield source.at(
            scope,
            name,
            f"{what} runs at priority class `{name}`; tenant `{source.tenant}` may use {allowed}",
            f"use one of them, or have the platform team grant it in {grant.key('priorityClasses')}",
        )


def written_key(spec: PlatformSpec, source: Source, value: object, *, as_key: bool = False) -> str:
    """The key of the tenant file that wrote `value` (as a mapping key with `as_key`), preferring
    the model's entry, then the tenant's; the entry itself when no key spells it."""
    text = spec.tenant_file_text.get(source.file) or {}
    model_entry = ("models", source.model) if source.model else None
    tenant_entry = ("tenants", source.tenant)
    found = list(_find(text, value, as_key, ()))
    for prefix in (model_entry, tenant_entry):
        if prefix is None:
            continue
        for path in found:
            if path[: len(prefix)] == prefix:
                return join_path(*path)
    if found:
        return join_path(*found[0])
    return join_path(*(model_entry or tenant_entry))


def _find(node: Any, value: object, as_key: bool, path: tuple[object, ...]) -> Iterator[tuple[object, ...]]:
    if isinstance(node, Mapping):
        for key, item in node.items():
            if as_key and key == value:
                yield (*path, key)
            yield from _find(item, value, as_key, (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _find(item, value, as_key, (*path, index))
    elif not as_key and node == value and not isinstance(node, bool):
        yield path
