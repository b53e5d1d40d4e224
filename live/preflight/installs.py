"""Preflight of the installs: Volcano and LWS releases, the CRD versions the cluster serves,
prerequisites the stack does not install, and the default queue."""

from __future__ import annotations

from config.spec.images import volcano_image_tag
from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_NAMESPACE, LWS_RELEASE
from config.upstream.vendored import VOLCANO, vendored_dir
from config.upstream.volcano import VOLCANO_NAMESPACE, VOLCANO_RELEASE
from live.cluster_state import ClusterState
from live.preflight.objects import managed_by_stack
from live.preflight.report import Finding, Report, object_name
from offline.manifests import Rendered
from offline.markdown import code


def check_installs(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
    queues_crd = state.crd("queues.scheduling.volcano.sh")
    installs = spec.config.volcano.install
    if queues_crd is None and not installs:
        report.add(
            Finding(
                "volcano-missing",
                "error",
                "volcano.install",
                "Volcano is not installed (no Queue CRD), and the stack does not install it (`volcano.install: "
                "false`): its Queues and PodGroups would be refused",
                "install Volcano where it is managed first, or set `volcano.install: true`",
            )
        )
    elif queues_crd is None:
        report.notes.append("Volcano is not installed: the first `pulumi up` installs it")
    else:
        scheduler = next(
            (
                d
                for d in state.deployments
                if d["metadata"].get("namespace") == VOLCANO_NAMESPACE and "scheduler" in object_name(d)
            ),
            None,
        )
        wanted = volcano_image_tag(spec.config)
        image = scheduler["spec"]["template"]["spec"]["containers"][0].get("image", "") if scheduler is not None else ""
        tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
        report.notes.append("Volcano is installed" + (f", scheduler image {code(image)}" if image else ""))
        if tag and tag != wanted:
            report.add(_version_finding(spec, tag, wanted))
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
        if (setting == "lws" and not spec.lws_install) or (setting == "volcano" and not installs):
            continue
        live = state.find("Namespace", namespace)
        if adopt and live is not None:
            report.notes.append(
                f"the {component} release `{namespace}/{release}` and its namespace will be adopted: `pulumi up` "
                "imports them, then upgrades the release in place"
            )
        if live is not None and not managed_by_stack(live) and not adopt:
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
    served = served_versions(state)
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
        queue_state = default.get("status", {}).get("state")
        said = code(str(queue_state)) if queue_state is not None else "in an unknown state"
        if queue_state == "Open":
            report.notes.append("the `default` queue is Open")
        else:
            report.add(
                Finding(
                    "default-queue",
                    "warning",
                    "defaultQueue",
                    f"the `default` queue is {said}: pods that name no queue stay Pending",
                    "fine if it was closed on purpose; otherwise `vcctl queue operate --action open --name default`",
                )
            )


# API groups the stack renders objects of but does not install: their CRDs must be there.
PREREQUISITES = {
    "monitoring.coreos.com": "prometheus-operator (kube-prometheus-stack)",
    "monitoring.googleapis.com": "Google Cloud Managed Service for Prometheus (GKE's managed collection)",
    "keda.sh": "KEDA",
    "gateway.networking.k8s.io": "Gateway API's CRDs (with the cluster's gateway implementation)",
    "inference.networking.k8s.io": "the Gateway API Inference Extension's CRDs (v1.4.0 `manifests.yaml`)",
    "inference.networking.x-k8s.io": "the Gateway API Inference Extension's CRDs (v1.4.0 `manifests.yaml`)",
}


def check_prerequisites(spec: PlatformSpec, rendered: Rendered, state: ClusterState, report: Report) -> None:
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


def served_versions(state: ClusterState) -> dict[str, set[str]]:
    served: dict[str, set[str]] = {}
    for crd in state.crds:
        group = crd.get("spec", {}).get("group", "")
        versions = {v["name"] for v in crd.get("spec", {}).get("versions", []) if v.get("served")}
        served.setdefault(group, set()).update(versions)
    return served


def _version_finding(spec: PlatformSpec, running: str, wanted: str) -> Finding:
    """A running Volcano of another version. Adopting and upgrading in one `pulumi up` mixes two
    risks, so the advice is to adopt at the running version when its schemas are vendored (the
    stack's features that version lacks are then refused by key path, and come in the upgrade),
    and otherwise to upgrade in a change of its own."""
    version = running.removeprefix("v")
    vendored = vendored_dir(VOLCANO, version) is not None
    adopting = bool(spec.config.volcano.adopt)
    if vendored and adopting:
        fix = (
            f"adopt at the running version first: set {code(f'volcano.version: {version}')} in the change that adopts "
            "Volcano (the stack's features that version lacks are refused by key path: leave them for the next "
            "change), then raise `volcano.version` in a change of its own (docs/operations.md, upgrading Volcano)"
        )
    elif adopting:
        fix = (
            f"{code(version)} is not vendored ({code(f'make upstream VOLCANO={version}')} vendors it, with network "
            "access), so the stack cannot adopt at the running version: upgrade the running Volcano to the stack's "
            "version with its own tooling first, or accept that `pulumi up` adopts and upgrades at once"
        )
    else:
        fix = "upgrade in a change of its own (docs/operations.md, upgrading Volcano)"
    return Finding(
        "volcano-version",
        "warning",
        "volcano.version",
        f"the running scheduler is {code(running)}, the stack installs {wanted}; `pulumi up` upgrades it (and its "
        "CRDs)",
        fix,
    )
