"""Recorded registrations -> Kubernetes manifests, Helm release files and a resource index.

Files are named by object identity (`<Kind>.<namespace>.<name>.yaml`) and written with sorted
keys, so two renders of the same config are byte-identical and a change shows up as a change to
exactly the objects it touches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offline.engine import Registration

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
PROVIDER_PREFIX = "pulumi:providers:"
TOP_LEVEL_ORDER = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class RenderedObject:
    urn: str
    type: str
    """Pulumi type token, e.g. `kubernetes:apps/v1:Deployment`."""
    file: str
    """Path under the render directory, e.g. `manifests/Queue.tenanta.yaml`."""
    manifest: dict[str, Any]
    patch: bool = False

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.manifest.get("apiVersion", ""))

    @property
    def name(self) -> str:
        return str(self.manifest.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str | None:
        return self.manifest.get("metadata", {}).get("namespace")


@dataclass(frozen=True)
class RenderedRelease:
    urn: str
    file: str
    data: dict[str, Any]


@dataclass
class Rendered:
    objects: list[RenderedObject] = field(default_factory=list)
    releases: list[RenderedRelease] = field(default_factory=list)
    index: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def by_kind(self, kind: str) -> list[RenderedObject]:
        return [o for o in self.objects if o.kind == kind and not o.patch]

    def find(self, kind: str, name: str, namespace: str | None = None) -> RenderedObject:
        for obj in self.objects:
            if obj.kind == kind and obj.name == name and obj.namespace == namespace and not obj.patch:
                return obj
        raise KeyError(f"{kind} {namespace + '/' if namespace else ''}{name} was not rendered")


def order_manifest(inputs: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata first; everything else sorted."""
    ordered = {key: inputs[key] for key in TOP_LEVEL_ORDER if key in inputs}
    ordered.update({key: inputs[key] for key in sorted(inputs) if key not in TOP_LEVEL_ORDER})
    return ordered


def object_file(manifest: dict[str, Any], patch: bool) -> str:
    metadata = manifest.get("metadata", {})
    kind = str(manifest.get("kind", "Object")) + ("Patch" if patch else "")
    parts = [kind]
    if metadata.get("namespace"):
        parts.append(str(metadata["namespace"]))
    parts.append(str(metadata.get("name", "unnamed")))
    return "manifests/" + ".".join(parts) + ".yaml"


def _release(reg: Registration) -> dict[str, Any]:
    inputs = reg.inputs
    data: dict[str, Any] = {
        "release": inputs.get("name", reg.name),
        "chart": inputs.get("chart"),
        "repository": (inputs.get("repositoryOpts") or {}).get("repo"),
        "version": inputs.get("version"),
        "namespace": inputs.get("namespace"),
    }
    login = {k: v for k, v in (inputs.get("repositoryOpts") or {}).items() if k != "repo"}
    if login:
        data["login"] = login  # the password is a secret: `[secret]` here, as in a preview
    options = {k: inputs[k] for k in ("timeout", "waitForJobs", "maxHistory", "atomic") if k in inputs}
    if options:
        data["options"] = options
    data["values"] = inputs.get("values") or {}
    return data


def _index_entry(reg: Registration, file: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"urn": reg.urn, "type": reg.type}
    if file:
        entry["file"] = file
    if reg.parent:
        entry["parent"] = reg.parent
    for key, value in (
        ("protect", reg.protect),
        ("retainOnDelete", reg.retain_on_delete),
        ("deleteBeforeReplace", reg.delete_before_replace),
        ("replaceOnChanges", reg.replace_on_changes),
        ("ignoreChanges", reg.ignore_changes),
        ("dependsOn", reg.dependencies),
        ("customTimeouts", reg.custom_timeouts),
        ("aliases", reg.aliases),
        ("import", reg.import_id),
    ):
        if value:
            entry[key] = value
    if reg.type.startswith(PROVIDER_PREFIX):
        entry["inputs"] = reg.inputs
    return entry


def from_registrations(registrations: list[Registration], outputs: dict[str, Any] | None = None) -> Rendered:
    rendered = Rendered(outputs=outputs or {})
    for reg in registrations:
        file: str | None = None
        if reg.type == RELEASE_TYPE:
            data = _release(reg)
            file = f"helm/{data['release']}.yaml"
            rendered.releases.append(RenderedRelease(reg.urn, file, data))
        elif reg.custom and reg.type.startswith("kubernetes:") and "kind" in reg.inputs:
            patch = reg.type.endswith("Patch")
            manifest = order_manifest(reg.inputs)
            file = object_file(manifest, patch)
            rendered.objects.append(RenderedObject(reg.urn, reg.type, file, manifest, patch))
        rendered.index.append(_index_entry(reg, file))
    rendered.objects.sort(key=lambda o: o.file)
    rendered.releases.sort(key=lambda r: r.file)
    rendered.index.sort(key=lambda e: e["urn"])
    return rendered
