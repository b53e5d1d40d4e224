"""Preflight: what a stack would meet on a real cluster, found before the first `pulumi up`.

Compares a stack's render with a `ClusterState` (read-only): configured nodes that do not exist
(a node patch would create a bare Node), accelerator counts and resource names the nodes do not
offer, labels the patches would change, taints that keep a model off every node, objects that
exist already without the stack managing them (`pulumi up` would fail with AlreadyExists, or an
adoption whose fields do not match), the Volcano and LWS installs, and queues or PodGroups that
are full or stuck now. Every finding says what to do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any, Literal

from config.images import volcano_image_tag
from config.platform_labels import MANAGED_BY, MODEL_LABEL, TENANT_LABEL
from config.quantity import quantity_value
from config.spec import ModelSpec, PlatformSpec
from config.upstream import LWS_NAMESPACE, LWS_RELEASE, VOLCANO_NAMESPACE, VOLCANO_RELEASE
from live.cluster_state import ClusterState
from offline.diff import dotted_get, fixed_field_changes
from offline.manifests import Rendered, RenderedObject

Severity = Literal["error", "warning"]
FIRST = 5
"""How many names a finding lists before it says how many more there are."""
FIELDS_SHOWN = 12
"""How many differing fields of one object a finding lists."""

# Kinds the stack creates that may already exist, and the setting that adopts them.
ADOPTABLE = ("Namespace", "Queue", "PriorityClass", "Deployment", "LeaderWorkerSet", "Service", "PodGroup")
# Fields the API server fills in; they never count as a difference.
SERVER_FIELDS = ("metadata.annotations.pulumi.com/waitFor", "metadata.annotations.pulumi.com/skipAwait")


@dataclass(frozen=True)
class Finding:
    check: str
    """Short id of the check, e.g. `nodes-missing`."""
    severity: Severity
    subject: str
    message: str
    fix: str = ""
    details: tuple[str, ...] = ()


@dataclass
class Report:
    stack: str
    source: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was checked and found in order (no action needed)."""
    queues: list[dict[str, Any]] = field(default_factory=list)
    """Allocation per queue and resource, for the capacity view."""

    def add(self, *findings: Finding) -> None:
        self.findings.extend(findings)


def _listed(names: list[str], first: int = FIRST) -> tuple[str, ...]:
    shown = tuple(names[:first])
    return (*shown, f"... and {len(names) - first} more") if len(names) > first else shown


def _name(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _allocatable(node: dict[str, Any], resource: str) -> Decimal:
    value = (node.get("status", {}).get("allocatable") or {}).get(resource)
    return quantity_value(str(value)) if value is not None else Decimal(0)


def preflight(spec: PlatformSpec, rendered: Rendered, state: ClusterState) -> Report:
    report = Report(spec.stack, state.source)
    _nodes(spec, state, report)
    _taints(spec, state, report)
    _existing_objects(spec, rendered, state, report)
    _installs(spec, rendered, state, report)
    _prerequisites(spec, rendered, state, report)
    _capacity(spec, state, report)
    return report


def _padding_hint(missing: str, existing: set[str]) -> str | None:
    """An existing node that differs from a missing one only in the zero-padding of its number."""
    match = re.match(r"^(.*?)(\d+)(\D*)$", missing)
    if not match:
        return None
    prefix, digits, suffix = match.groups()
    for name in existing:
        other = re.match(rf"^{re.escape(prefix)}(\d+){re.escape(suffix)}$", name)
        if other and int(other.group(1)) == int(digits) and other.group(1) != digits:
            return name
    return None


def _nodes(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    resource, words = spec.gpu_resource, spec.accelerator.words
    existing = {_name(n): n for n in state.nodes}
    offered = sorted({key for n in state.nodes for key in (n.get("status", {}).get("allocatable") or {}) if "/" in key})
    accelerator_nodes = [name for name, n in existing.items() if _allocatable(n, resource) > 0]
    if state.nodes and not accelerator_nodes:
        report.add(
            Finding(
                "resource-not-offered",
                "error",
                "cluster.gpuResource",
                f"no node offers `{resource}`: every model would stay Pending and quotas on it limit nothing",
                "set `cluster.gpuResource` to the name the device plugin advertises"
                + (
                    f" (the nodes offer: {', '.join(offered)})" if offered else " (no node offers an extended resource)"
                ),
            )
        )
    topology = spec.topology
    if topology is None:
        report.notes.append(f"{len(accelerator_nodes)} node(s) offer {resource}; the stack describes no topology")
        return
    configured = list(topology.node_gpus)
    missing = [n for n in configured if n not in existing]
    if missing:
        hints = [f"{n} (did you mean {hint}?)" if (hint := _padding_hint(n, set(existing))) else n for n in missing]
        report.add(
            Finding(
                "nodes-missing",
                "error",
                "topology",
                f"{len(missing)} configured node(s) do not exist; their label patches would create bare Node objects",
                "fix the names or ranges (zero-padding: `gpu-[001-128]` is not `gpu-[1-128]`), or remove the nodes",
                _listed(hints),
            )
        )
    unplaced = [n for n in accelerator_nodes if n not in topology.node_gpus]
    if unplaced:
        report.add(
            Finding(
                "nodes-unplaced",
                "warning",
                "topology",
                f"{len(unplaced)} node(s) with {words} are in no topology domain: placement checks leave them out",
                "add them to a leaf domain (`python -m offline import-topology` writes domains from node labels)",
                _listed(unplaced),
            )
        )
    mismatched = [
        f"{name}: {format(_allocatable(existing[name], resource), 'f')} allocatable, {gpus} configured"
        for name, gpus in topology.node_gpus.items()
        if name in existing and accelerator_nodes and _allocatable(existing[name], resource) != gpus
    ]
    if mismatched:
        report.add(
            Finding(
                "gpus-per-node",
                "warning",
                "topology",
                f"{len(mismatched)} node(s) offer a different number of {words} than the stack says; placement "
                "checks count the configured number",
                "correct `gpusPerNode` (cluster, domain or node group), or check the device plugin on those nodes",
                _listed(mismatched),
            )
        )
    relabelled = [
        f"{name}: "
        + ", ".join(f"{k}={(existing[name]['metadata'].get('labels') or {}).get(k)!s}->{v}" for k, v in changes)
        for name in configured
        if name in existing
        and (
            changes := [
                (k, v)
                for k, v in topology.labels_of(name).items()
                if (existing[name]["metadata"].get("labels") or {}).get(k) != v
            ]
        )
    ]
    if relabelled and spec.config.topology is not None and spec.config.topology.node_labels.enabled:
        report.add(
            Finding(
                "labels-change",
                "warning",
                "topology",
                f"the node patches would change the topology labels of {len(relabelled)} node(s); HyperNodes follow "
                "the labels, so running gangs may be regrouped",
                "review the list; if the cluster's labels are right, import them with `import-topology`",
                _listed(relabelled),
            )
        )


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration.get("key") == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value") == taint.get("value"):
            return True
    return False


def _candidates(spec: PlatformSpec, model: ModelSpec, state: ClusterState) -> list[dict[str, Any]]:
    """Nodes the model's pods could use: topology nodes (or nodes with the accelerator) matching
    its node selector."""
    selector = model.config.node_selector
    names = set(spec.topology.node_gpus) if spec.topology else None
    out = []
    for node in state.nodes:
        labels = node.get("metadata", {}).get("labels") or {}
        if names is not None and _name(node) not in names:
            continue
        if names is None and model.gpus_per_pod and _allocatable(node, model.gpu_resource) == 0:
            continue
        if all(labels.get(k) == v for k, v in selector.items()):
            out.append(node)
    return out


def _taints(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    for model in spec.models.values():
        candidates = _candidates(spec, model, state)
        if not candidates:
            continue
        tolerations = [t.model_dump(by_alias=True, exclude_none=True) for t in model.config.tolerations]
        blocking: dict[str, int] = {}
        schedulable = 0
        for node in candidates:
            untolerated = [
                t
                for t in node.get("spec", {}).get("taints") or []
                if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
            ]
            if not untolerated:
                schedulable += 1
            for taint in untolerated:
                text = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
                blocking[text] = blocking.get(text, 0) + 1
        if schedulable == 0:
            report.add(
                Finding(
                    "taints",
                    "error",
                    f"models.{model.name}.tolerations",
                    f"every node model `{model.name}` could use has a taint it does not tolerate, so it can never "
                    "schedule",
                    "add tolerations for these taints, or remove the taints from the GPU nodes",
                    _listed([f"{taint} on {count} node(s)" for taint, count in sorted(blocking.items())]),
                )
            )


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
    elif _normal(desired) != _normal(live):
        yield f"{path}: {json.dumps(live)} -> {json.dumps(desired)}"


def _normal(value: Any) -> Any:
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


def _existing_objects(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
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
        differences = list(_differences(_comparable(obj.manifest), live))
        fixed = [
            f"{dotted}: {json.dumps(dotted_get(live, dotted))} -> {json.dumps(dotted_get(obj.manifest, dotted))}"
            for dotted in fixed_field_changes(
                live, obj.manifest, replace_on.get(obj.file, ()), lambda a, b: _normal(a) == _normal(b)
            )
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
                    _listed(fixed, FIELDS_SHOWN),
                )
            )
        elif obj.file in imports:
            adopting.append(subject)
            if differences:
                report.add(
                    Finding(
                        "adopt-updates",
                        "warning",
                        subject,
                        "is adopted: `pulumi up` imports it, then updates these fields in place",
                        "review them; the preview shows the same as an import followed by an update",
                        _listed(differences, FIELDS_SHOWN),
                    )
                )
        elif not _managed(live):
            report.add(
                Finding(
                    "exists-unmanaged",
                    "error",
                    subject,
                    "already exists and is not managed by this stack; `pulumi up` would fail with AlreadyExists",
                    f"adopt it with `{setting}` (`pulumi up` then imports it and updates the fields below in "
                    "place), or delete it",
                    _listed(differences, FIELDS_SHOWN) or ("no field differs: it is adopted as it is",),
                )
            )
    if adopting:
        report.notes.append(f"{len(adopting)} existing object(s) will be adopted: " + ", ".join(adopting))


def _managed(live: dict[str, Any]) -> bool:
    """Whether a live object carries the label this stack puts on everything it creates."""
    labels = live.get("metadata", {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())


def _comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the stack sets of an object, without what only Pulumi reads."""
    return {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}


def _installs(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
    queues_crd = state.crd("queues.scheduling.volcano.sh")
    if queues_crd is None:
        report.notes.append("Volcano is not installed: the first `pulumi up` installs it")
    else:
        scheduler = next(
            (
                d
                for d in state.deployments
                if d["metadata"].get("namespace") == VOLCANO_NAMESPACE and "scheduler" in _name(d)
            ),
            None,
        )
        wanted = volcano_image_tag(spec.config)
        image = scheduler["spec"]["template"]["spec"]["containers"][0].get("image", "") if scheduler is not None else ""
        tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
        report.notes.append("Volcano is installed" + (f", scheduler image `{image}`" if image else ""))
        if tag and tag != wanted:
            report.add(
                Finding(
                    "volcano-version",
                    "warning",
                    "volcano.version",
                    f"the running scheduler is {tag}, the stack installs {wanted}; `pulumi up` upgrades it (and its "
                    "CRDs)",
                    "upgrade in a change of its own (docs/operations.md, upgrading Volcano)",
                )
            )
    for namespace, release, component, crd, adopt, setting in (
        (
            VOLCANO_NAMESPACE,
            VOLCANO_RELEASE,
            "Volcano",
            "queues.scheduling.volcano.sh",
            spec.config.volcano.adopt,
            "volcano",
        ),
        (
            LWS_NAMESPACE,
            LWS_RELEASE,
            "LeaderWorkerSet",
            "leaderworkersets.leaderworkerset.x-k8s.io",
            spec.config.lws.adopt,
            "lws",
        ),
    ):
        if setting == "lws" and not spec.lws_install:
            continue
        live = state.find("Namespace", namespace)
        if live is not None and not _managed(live) and not adopt:
            report.add(
                Finding(
                    "install-unmanaged",
                    "error",
                    namespace,
                    f"{component} is installed in `{namespace}`, but not by this stack; installing it again would "
                    "collide with that release, and uninstalling that release would delete its CRDs with every "
                    "object of them",
                    f"set `{setting}.adopt: true`: `pulumi up` imports the Helm release `{release}` and the "
                    f"namespace, then upgrades the release in place to the stack's chart and values "
                    f"(`helm/{setting}.yaml`); `helm list -n {namespace}` must show it under that name",
                )
            )
        elif live is None and state.crd(crd) is not None and not adopt:
            report.add(
                Finding(
                    "install-elsewhere",
                    "warning",
                    crd,
                    f"the {component} CRD exists, but `{namespace}` does not: {component} was installed elsewhere",
                    f"find that install; two installs of {component} fight over the same CRD and webhooks",
                )
            )
    served = _served_versions(state)
    for api_version in sorted({o.api_version for o in rendered.objects if "." in o.api_version.split("/")[0]}):
        group, version = api_version.split("/")
        if group in served and version not in served[group]:
            report.add(
                Finding(
                    "crd-version",
                    "error",
                    api_version,
                    f"the cluster serves {group} only as {', '.join(sorted(served[group]))}; objects of "
                    f"{api_version} would be refused",
                    "upgrade the component that owns the CRD (Volcano or LWS) before `pulumi up`",
                )
            )
    default = state.find("Queue", "default")
    if default is not None:
        queue_state = default.get("status", {}).get("state", "in an unknown state")
        if queue_state == "Open":
            report.notes.append("the `default` queue is Open")
        else:
            report.add(
                Finding(
                    "default-queue",
                    "warning",
                    "defaultQueue",
                    f"the `default` queue is {queue_state}: pods that name no queue stay Pending",
                    "fine if it was closed on purpose; otherwise `vcctl queue operate --action open --name default`",
                )
            )


# API groups the stack renders objects of but does not install: their CRDs must be there.
PREREQUISITES = {
    "monitoring.coreos.com": "prometheus-operator (kube-prometheus-stack)",
    "keda.sh": "KEDA",
}


def _prerequisites(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
    needed: dict[str, set[str]] = {}
    for obj in rendered.objects:
        group = obj.api_version.split("/")[0]
        if group in PREREQUISITES:
            needed.setdefault(group, set()).add(obj.kind)
    for group, kinds in sorted(needed.items()):
        missing = sorted(kind for kind in kinds if state.crd(f"{kind.lower()}s.{group}") is None)
        if missing:
            report.add(
                Finding(
                    "prerequisite-missing",
                    "error",
                    group,
                    f"the stack renders {', '.join(missing)} objects, but the cluster has no CRD for them; "
                    "`pulumi up` would fail on the first one",
                    f"install {PREREQUISITES[group]} first (the stack does not install it)",
                )
            )
    observability = spec.config.observability
    if observability.enabled and observability.dashboard.enabled:
        namespace = observability.dashboard_namespace
        if state.find("Namespace", namespace) is None:
            report.add(
                Finding(
                    "prerequisite-missing",
                    "error",
                    "observability.dashboard.namespace",
                    f"the dashboard ConfigMap goes to namespace `{namespace}`, which does not exist",
                    "set `observability.namespace` (or `dashboard.namespace`) to Grafana's namespace",
                )
            )


def _served_versions(state: ClusterState) -> dict[str, set[str]]:
    served: dict[str, set[str]] = {}
    for crd in state.crds:
        group = crd.get("spec", {}).get("group", "")
        versions = {v["name"] for v in crd.get("spec", {}).get("versions", []) if v.get("served")}
        served.setdefault(group, set()).update(versions)
    return served


def _capacity(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    full: list[str] = []
    for queue in state.queues:
        capability = queue.get("spec", {}).get("capability") or {}
        allocated = queue.get("status", {}).get("allocated") or {}
        for resource, cap in capability.items():
            used = quantity_value(str(allocated.get(resource, 0)))
            report.queues.append(
                {
                    "queue": _name(queue),
                    "resource": resource,
                    "allocated": str(allocated.get(resource, 0)),
                    "capability": str(cap),
                }
            )
            if used >= quantity_value(str(cap)) and quantity_value(str(cap)) > 0:
                full.append(f"{_name(queue)}: {allocated.get(resource)} of {cap} {resource}")
    if full:
        report.add(
            Finding(
                "queues-full",
                "warning",
                "tenants",
                f"{len(full)} queue resource(s) are at their capability now; new work there waits",
                "raise the capability, or expect lower quotas to leave work Pending",
                _listed(full),
            )
        )
    pending = [
        f"{g['metadata'].get('namespace')}/{_name(g)} ({g.get('status', {}).get('phase')})"
        for g in state.pod_groups
        if g.get("status", {}).get("phase") in ("Pending", "Inqueue") and not g.get("status", {}).get("running")
    ]
    if pending:
        report.add(
            Finding(
                "podgroups-pending",
                "warning",
                "models",
                f"{len(pending)} PodGroup(s) are waiting now (a gang that cannot fit, or a queue that is full)",
                "`kubectl describe podgroup` shows why; changing quotas or topology may free or block them",
                _listed(pending),
            )
        )


def _detail(text: str) -> str:
    """Field paths and values read as code; the sentences that summarise them do not."""
    return text if text.startswith("... and ") or " " in text.split(":")[0] else f"`{text}`"


def markdown(report: Report) -> str:
    errors = [f for f in report.findings if f.severity == "error"]
    warnings = [f for f in report.findings if f.severity == "warning"]
    lines = [
        f"## Preflight of stack `{report.stack}`",
        "",
        f"Read from {report.source}: {len(errors)} error(s), {len(warnings)} warning(s).",
        "",
    ]
    for title, found in (("Errors", errors), ("Warnings", warnings)):
        if not found:
            continue
        lines += [f"### {title}", ""]
        for finding in found:
            lines.append(f"- **{finding.subject}** ({finding.check}): {finding.message}")
            if finding.fix:
                lines.append(f"  - fix: {finding.fix}")
            lines += [f"  - {_detail(detail)}" for detail in finding.details]
        lines.append("")
    if report.notes:
        lines += ["### Found", ""] + [f"- {note}" for note in report.notes] + [""]
    if report.queues:
        lines += ["### Queues now", "", "| queue | resource | allocated | capability |", "|---|---|---|---|"]
        lines += [f"| {q['queue']} | {q['resource']} | {q['allocated']} | {q['capability']} |" for q in report.queues]
        lines.append("")
    if not report.findings:
        lines += ["Nothing found: the stack meets the cluster cleanly.", ""]
    return "\n".join(lines)


def as_json(report: Report) -> str:
    return json.dumps(asdict(report), indent=2) + "\n"
