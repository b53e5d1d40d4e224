"""Preflight of the objects the stack creates that exist already: adoption, fields that differ,
and fields that cannot change in place."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from config.platform_labels import MANAGED_BY, MODEL_LABEL, TENANT_LABEL
from config.schema.quantity import quantity_value
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report, listed
from offline.diff import dotted_get, fixed_field_changes
from offline.manifests import Rendered, RenderedObject
from offline.markdown import code

# Kinds the stack creates that may already exist, and the setting that adopts them.
ADOPTABLE = ("Namespace", "Queue", "PriorityClass", "Deployment", "LeaderWorkerSet", "Service", "PodGroup")
# Annotations only Pulumi reads; they never count as a difference.
SERVER_FIELDS = (
    "metadata.annotations.pulumi.com/waitFor",
    "metadata.annotations.pulumi.com/skipAwait",
    "metadata.annotations.pulumi.com/patchForce",
)
# Field managers whose fields pulumi-kubernetes takes over on its first apply (`fixCSAFieldManagers`,
# provider/pkg/await/await.go, through fluxcd/pkg/ssa `matchFieldManager`): every other manager keeps
# its fields; the adoption's `patchForce` takes them anyway, and a controller among them sets them back.
TAKEN_OVER_MANAGERS = ("kubectl", "before-first-apply", "pulumi-kubernetes")


ZERO_VALUES: tuple[Any, ...] = (False, 0, "", [])
"""Values a field tagged `omitempty` in the Kubernetes API types is never stored with: a
PriorityClass's `globalDefault: false` reads back without the field (k8s.io/api
scheduling/v1/types.go)."""


def _differences(desired: Any, live: Any, path: str = "") -> Iterator[str]:
    """Paths set in `desired` whose live value differs (what the stack does not set is ignored)."""
    if isinstance(desired, dict):
        for key, value in desired.items():
            child = f"{path}.{key}" if path else str(key)
            if child in SERVER_FIELDS:
                continue
            yield from _differences(value, live.get(key) if isinstance(live, dict) else None, child)
    elif isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        for index, (want, have) in enumerate(zip(desired, live, strict=True)):
            yield from _differences(want, have, f"{path}[{index}]")
    elif live is None and desired in ZERO_VALUES:
        return  # the API server leaves a field out at its zero value (`omitempty`), as it is set
    elif comparable_value(desired) != comparable_value(live):
        yield f"{path}: {json.dumps(live)} -> {json.dumps(desired)}"


def differences(obj: RenderedObject, live: dict[str, Any]) -> list[str]:
    """`<field>: <live> -> <rendered>` for every field the stack sets that the live object has otherwise."""
    return list(_differences(_comparable(obj.manifest), live))


def comparable_value(value: Any) -> Any:
    """Quantities and numbers compare by value (`8` and `"8"`, `64Gi` and `68719476736`)."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return value
    try:
        return str(quantity_value(str(value)).normalize())
    except (ValueError, ArithmeticError):
        return value


def _adopt_setting(obj: RenderedObject) -> str:
    labels = obj.manifest.get("metadata", {}).get("labels") or {}
    if obj.kind in ("Namespace", "Queue"):
        what = "namespaces" if obj.kind == "Namespace" else "queue"
        return f"tenants.{labels.get(TENANT_LABEL, '<tenant>')}.adopt: [{what}]"
    if obj.kind == "PriorityClass":
        return f"priorityClasses.{obj.name}.adopt: true"
    what = {"Service": "service", "PodGroup": "podGroup"}.get(obj.kind, "workload")
    return f"models.{labels.get(MODEL_LABEL, '<model>')}.adopt: [{what}]"


def check_existing_objects(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
    """Objects the stack creates that exist already. Adopted (`import_`), `pulumi up` imports
    them and then updates what differs in place; a differing field that cannot change in place
    would need a replacement, which Pulumi refuses for an object it imports."""
    imports = {entry["file"]: entry for entry in rendered.index if entry.get("import")}
    replace_on = {entry["file"]: entry.get("replaceOnChanges") or [] for entry in rendered.index if entry.get("file")}
    adopting: list[str] = []
    for obj in rendered.objects:
        labels_set = obj.manifest.get("metadata", {}).get("labels") or {}
        tenant_or_model = TENANT_LABEL in labels_set or MODEL_LABEL in labels_set or obj.kind == "PriorityClass"
        if obj.patch or obj.kind not in ADOPTABLE or not tenant_or_model:
            continue  # the platform's own namespaces are checked with their installs
        live = state.find(obj.kind, obj.name, obj.namespace)
        subject = f"{obj.kind} {obj.namespace + '/' if obj.namespace else ''}{obj.name}"
        setting = _adopt_setting(obj)
        if live is None:
            if obj.file in imports:
                report.add(
                    Finding(
                        "adopt-missing",
                        "error",
                        subject,
                        "is marked to be adopted but does not exist; the import would fail",
                        f"remove it from `{setting}`",
                    )
                )
            continue
        if obj.file not in imports and managed_by_stack(live):
            continue  # the stack's own object, on a later run: drift (`drift.py`) says what changed
        changed = differences(obj, live)
        fixed = [
            f"{dotted}: {json.dumps(dotted_get(live, dotted))} -> {json.dumps(dotted_get(obj.manifest, dotted))}"
            for dotted in fixed_field_changes(live, obj.manifest, replace_on.get(obj.file, ()), _kept_or_equal)
        ]
        if fixed:
            report.add(
                Finding(
                    "adopt-replaces" if obj.file in imports else "exists-unmanaged",
                    "error",
                    subject,
                    ("is adopted" if obj.file in imports else "already exists and is not managed by this stack")
                    + ", and these fields differ but cannot change in place: the object would have to be "
                    "replaced, which `pulumi up` refuses for an object it imports",
                    "make the stack set the live values, or delete the object and let the stack create it",
                    listed(fixed),
                )
            )
        elif obj.file in imports:
            adopting.append(subject)
            owned = [(line, field_managers(live, line.split(": ", 1)[0])) for line in changed]
            foreign = sorted({m for _, managers in owned for m in managers if not m.startswith(TAKEN_OVER_MANAGERS)})
            if foreign:
                report.add(
                    Finding(
                        "adopt-foreign-manager",
                        "error",
                        subject,
                        f"is adopted, and fields that change belong to {', '.join(code(m) for m in foreign)}, "
                        "which the provider does not take over: the adoption forces them (`pulumi.com/patchForce`), "
                        "and a controller among those managers (Argo CD, Flux, an operator) sets them back",
                        "take the object out of that manager's control first (remove it from its Argo CD application "
                        "or Helm release), then adopt it",
                        listed([f"{line} (owned by {', '.join(m) or 'no manager'})" for line, m in owned]),
                    )
                )
            elif changed:
                report.add(
                    Finding(
                        "adopt-updates",
                        "warning",
                        subject,
                        "is adopted: `pulumi up` imports it, then updates these fields in place",
                        "review them; the preview shows the same as an import followed by an update",
                        listed([f"{line} (owned by {', '.join(m) or 'no manager'})" for line, m in owned]),
                    )
                )
        else:
            report.add(
                Finding(
                    "exists-unmanaged",
                    "error",
                    subject,
                    "already exists and is not managed by this stack; `pulumi up` would fail with AlreadyExists",
                    f"adopt it with `{setting}` (`pulumi up` then imports it and updates the fields below in "
                    "place), or delete it",
                    listed(changed) or ("no field differs: it is adopted as it is",),
                )
            )
    if adopting:
        report.notes.append(f"{len(adopting)} existing object(s) will be adopted: " + ", ".join(adopting))


def _kept_or_equal(live: Any, desired: Any) -> bool:
    """An immutable field the stack does not set is kept as the cluster has it (a Service's
    `clusterIP`, which the API server allocates): only a value the stack sets can differ."""
    return desired is None or comparable_value(live) == comparable_value(desired)


def managed_by_stack(live: dict[str, Any]) -> bool:
    """Whether a live object carries the label this stack puts on everything it creates."""
    labels = live.get("metadata", {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())


def _comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the stack sets of an object, without what only Pulumi reads."""
    return {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}


def field_managers(live: dict[str, Any], dotted: str) -> list[str]:
    """The managers that own a field (a dotted path with `[index]` for list items) in the live
    object's `metadata.managedFields` (`fieldsV1`: `f:<name>` for fields, `k:{...}` for the items of
    a keyed list such as `containers`)."""
    parts = [p for p in dotted.replace("[", ".[").split(".") if p]
    owners = []
    for entry in live.get("metadata", {}).get("managedFields") or []:
        if isinstance(entry, dict) and _owns(entry.get("fieldsV1") or {}, parts, live):
            owners.append(str(entry.get("manager", "")))
    return sorted(set(owners))


def _owns(fields: Any, parts: list[str], value: Any) -> bool:
    if not parts:
        return True
    if not isinstance(fields, dict):
        return False
    head, rest = parts[0], parts[1:]
    if head.startswith("["):
        index = int(head[1:-1])
        item = value[index] if isinstance(value, list) and index < len(value) else None
        for key, child in fields.items():
            if key.startswith("k:") and isinstance(item, dict):
                try:
                    selector = json.loads(key[2:])
                except ValueError:
                    continue
                if all(item.get(k) == v for k, v in selector.items()):
                    return _owns(child, rest, item)
            elif key == f"i:{index}":
                return _owns(child, rest, item)
        return "." in fields  # the manager owns the list as a whole
    child = fields.get(f"f:{head}")
    if child is None:
        return False
    return not rest or child == {} or _owns(child, rest, value.get(head) if isinstance(value, dict) else None)
