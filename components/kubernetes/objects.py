"""Small helpers that register Kubernetes objects the same way in every component."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi

from components.kubernetes.resource import HELM_RELEASE, NAMESPACE, KubernetesResource, custom_kind
from config.platform_labels import MANAGED_BY
from config.spec.images import ChartSource
from config.upstream.kubernetes import PATCH_FORCE_ANNOTATION


def custom_resource(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> KubernetesResource:
    """An object of a kind a CRD defines (Volcano, LWS, monitoring, KEDA) from its manifest (the
    pure builders produce those)."""
    return KubernetesResource(name, custom_kind(manifest["apiVersion"], manifest["kind"]), manifest, opts)


def installed_chart(
    prefix: str,
    release: str,
    namespace: str,
    source: ChartSource,
    protect: bool,
    parent: pulumi.Resource,
    pull_secret: Callable[[str, pulumi.ResourceOptions], pulumi.Resource] | None,
    adopt: bool,
    chart: dict[str, Any],
    login: tuple[str, Any] | None = None,
) -> KubernetesResource:
    """A platform component's namespace, the pull Secret of its images (made by `pull_secret`,
    if any) and its Helm release, from a chart repository or an OCI reference. `protect` guards
    the namespace too: deleting it would take the release's objects with it. `adopt` takes over a
    release (and namespace) installed by hand. `chart` holds the Release's other inputs (`version`,
    `values`, `timeout`, ...) in the provider's spelling; `login` the username and (secret)
    password of the chart's registry (pulumi-kubernetes logs in to an OCI registry with them when
    both are set)."""
    created = KubernetesResource(
        f"{prefix}-namespace",
        NAMESPACE,
        adoptable(adopt, {"metadata": {"name": namespace, "labels": dict(MANAGED_BY)}}),
        merged(
            pulumi.ResourceOptions(parent=parent, protect=protect), adopted(adopt, {"metadata": {"name": namespace}})
        ),
    )
    depends: list[pulumi.Resource] = [created]
    if pull_secret is not None:
        depends.append(
            pull_secret(f"{prefix}-pull-secret", pulumi.ResourceOptions(parent=parent, depends_on=[created]))
        )
    inputs = {
        "name": release,  # explicit: object names derive from it and are contracts
        "chart": source.chart,
        "namespace": namespace,
        "maxHistory": 10,
        **chart,
    }
    options: dict[str, Any] = {"repo": source.repository} if source.repository is not None else {}
    if login is not None:
        options.update({"username": login[0], "password": login[1]})
    if source.ca_file is not None:
        options["caFile"] = source.ca_file
    if options:
        inputs["repositoryOpts"] = options
    return KubernetesResource(
        f"{prefix}-release",
        HELM_RELEASE,
        inputs,
        merged(
            pulumi.ResourceOptions(parent=parent, protect=protect, depends_on=depends),
            adopted(adopt, {"metadata": {"name": release, "namespace": namespace}}),
        ),
    )


def merged(*options: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """Resource options combined left to right, as `ResourceOptions.merge` combines two: a later
    option's values win, and lists (`depends_on`, `aliases`) are joined in order."""
    result = pulumi.ResourceOptions()
    for option in options:
        result = pulumi.ResourceOptions.merge(result, option)
    return result


def adoptable(adopt: bool, manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest of an object the stack takes over, with `pulumi.com/patchForce: "true"`: its
    fields belong to whoever wrote them last (`kubectl`, Helm, Argo CD, a named manager), and the
    provider takes over only managers named `kubectl...`, `before-first-apply` or
    `pulumi-kubernetes...` (`fixCSAFieldManagers` in pulumi-kubernetes `provider/pkg/await/await.go`)
    and not at all in a preview, whose dry-run apply then conflicts on every field that changes.
    With the annotation every apply, the preview's included, is forced (`patchForce` in the same
    file). It stays while `adopt` is set; removing `adopt` after the first `pulumi up` removes it
    too, an update of that one annotation."""
    if not adopt:
        return manifest
    metadata = dict(manifest.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), PATCH_FORCE_ANNOTATION: "true"}
    return {**manifest, "metadata": metadata}


def adopted(adopt: bool, manifest: dict[str, Any]) -> pulumi.ResourceOptions:
    """`import_` of an object the stack takes over (its ID: `<namespace>/<name>` or `<name>`).
    Left in place after the import, it is ignored: the object is then in the stack's state."""
    if not adopt:
        return pulumi.ResourceOptions()
    metadata = manifest["metadata"]
    namespace = metadata.get("namespace")
    return pulumi.ResourceOptions(import_=f"{namespace}/{metadata['name']}" if namespace else metadata["name"])


def force_ownership(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """`cluster.forceFieldOwnership`: every Kubernetes object applied with `pulumi.com/patchForce`,
    which the provider honours on every kind (`patchForce` in pulumi-kubernetes
    provider/pkg/await/await.go, read for creates and server-side-apply updates alike): a field
    another manager holds is taken over instead of failing the apply with a conflict. Helm
    releases and the provider have no such annotation."""
    if not args.type_.startswith("kubernetes:") or args.type_ == "kubernetes:helm.sh/v3:Release":
        return None
    metadata = args.props.get("metadata")
    if not isinstance(metadata, dict):
        return None
    annotations = {**(metadata.get("annotations") or {}), PATCH_FORCE_ANNOTATION: "true"}
    props = {**args.props, "metadata": {**metadata, "annotations": annotations}}
    return pulumi.ResourceTransformationResult(props, args.opts)
