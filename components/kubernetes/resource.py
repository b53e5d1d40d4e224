"""The Kubernetes provider's resource types the program registers (built-in kinds, kinds CRDs
define, Helm releases), registered without pulumi-kubernetes' generated classes.

Why: speed. A generated class (`k8s.core.v1.Namespace`, `k8s.helm.v3.Release`, ...) only shapes a
registration: the type token, the inputs it always sets (`apiVersion` and `kind`; `compat` for a
Helm Release), the provider's version in the options, aliases to the same kind's older API
versions and the inputs it keeps secret. Importing the classes costs far more than that: a module
per API group builds every class and typed input and output of the group (`core/v1` alone is some
1,200 classes, 0.19 s; a quarter of a second with the other groups the program uses), and each
registration's outputs are translated back into those types. That was a third of an example
render, and of every `pulumi preview`.

What it is not: a typed resource. Its outputs are untyped and hold only the keys of its inputs
(what the engine echoes back); there is no `.status`, no defaulted field and no typed attribute.
The program never reads a registered object's outputs except for dependencies, which is why this is
enough; code that needs a live field (a Service's cluster IP, a status) must use the generated class.

Proven equal: `tests/components/test_kubernetes_types.py` registers every type the committed stacks
use both ways (the generated class or `apiextensions.CustomResource`, and this) and compares the
gRPC requests field by field, so an upgrade of pulumi-kubernetes whose classes send something else
fails there, naming the difference.

Adding a kind: a built-in kind gets a constant below made with `_built_in` (its API version, kind,
the aliases and secret inputs its generated class declares: read them from the class's `__init__`);
a kind a CRD defines needs nothing, `custom_kind(apiVersion, kind)` (or
`components.kubernetes.objects.custom_resource`) registers it. Then add it to the type-equivalence
test, which fails for a built-in kind it does not compare.

The one private piece of pulumi-kubernetes this relies on is `pulumi_kubernetes._utilities.
get_resource_opts_defaults` (the provider version every generated class puts in the options); a
test fails loudly, naming it, if a release moves or renames it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes import _utilities as pulumi_kubernetes_utilities  # what every generated class uses

from components.kubernetes.ledger import record


@dataclass(frozen=True)
class KubernetesType:
    """What pulumi-kubernetes' generated class of one resource type adds to a registration."""

    token: str
    fixed_inputs: Mapping[str, str]
    """Inputs the class always sends, whatever the caller passes."""
    aliases: tuple[str, ...] = ()
    """Types of the kind's older API versions: a stack that registered one updates in place."""
    secret_inputs: tuple[str, ...] = ()
    """Inputs sent as secrets, and kept secret in the outputs and the state."""


def _built_in(
    api_version: str,
    kind: str,
    *,
    patch: bool = False,
    aliases: tuple[str, ...] = (),
    secret_inputs: tuple[str, ...] = (),
) -> KubernetesType:
    """A built-in kind: the core group is `core` in the token and absent from `apiVersion`."""
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return KubernetesType(
        f"kubernetes:{group_version}:{kind}{'Patch' if patch else ''}",
        {"apiVersion": api_version, "kind": kind},
        aliases,
        secret_inputs,
    )


def custom_kind(api_version: str, kind: str, *, patch: bool = False) -> KubernetesType:
    """A kind a CRD defines (Volcano, LWS, monitoring, KEDA), as `apiextensions.CustomResource` (or
    `CustomResourcePatch`, a server-side-apply patch of an object the stack does not own)
    registers it: no aliases, no secrets."""
    return KubernetesType(
        f"kubernetes:{api_version}:{kind}{'Patch' if patch else ''}", {"apiVersion": api_version, "kind": kind}
    )


NAMESPACE = _built_in("v1", "Namespace")
SERVICE = _built_in("v1", "Service")
CONFIG_MAP = _built_in("v1", "ConfigMap")
SECRET = _built_in("v1", "Secret", secret_inputs=("data", "stringData"))
PERSISTENT_VOLUME_CLAIM = _built_in("v1", "PersistentVolumeClaim")
CONFIG_MAP_PATCH = _built_in("v1", "ConfigMap", patch=True)
"""A server-side-apply patch of the keys of a ConfigMap whose other keys are someone else's."""
NODE_PATCH = _built_in("v1", "Node", patch=True)
"""A server-side-apply patch of a Node the stack does not own."""
DEPLOYMENT = _built_in(
    "apps/v1",
    "Deployment",
    aliases=(
        "kubernetes:apps/v1beta1:Deployment",
        "kubernetes:apps/v1beta2:Deployment",
        "kubernetes:extensions/v1beta1:Deployment",
    ),
)
PRIORITY_CLASS = _built_in(
    "scheduling.k8s.io/v1",
    "PriorityClass",
    aliases=(
        "kubernetes:scheduling.k8s.io/v1alpha1:PriorityClass",
        "kubernetes:scheduling.k8s.io/v1beta1:PriorityClass",
    ),
)
HORIZONTAL_POD_AUTOSCALER = _built_in(
    "autoscaling/v2",
    "HorizontalPodAutoscaler",
    aliases=(
        "kubernetes:autoscaling/v1:HorizontalPodAutoscaler",
        "kubernetes:autoscaling/v2beta1:HorizontalPodAutoscaler",
        "kubernetes:autoscaling/v2beta2:HorizontalPodAutoscaler",
    ),
)
SERVICE_ACCOUNT = _built_in("v1", "ServiceAccount")
ROLE = _built_in(
    "rbac.authorization.k8s.io/v1",
    "Role",
    aliases=("kubernetes:rbac.authorization.k8s.io/v1alpha1:Role", "kubernetes:rbac.authorization.k8s.io/v1beta1:Role"),
)
ROLE_BINDING = _built_in(
    "rbac.authorization.k8s.io/v1",
    "RoleBinding",
    aliases=(
        "kubernetes:rbac.authorization.k8s.io/v1alpha1:RoleBinding",
        "kubernetes:rbac.authorization.k8s.io/v1beta1:RoleBinding",
    ),
)
NETWORK_POLICY = _built_in(
    "networking.k8s.io/v1", "NetworkPolicy", aliases=("kubernetes:extensions/v1beta1:NetworkPolicy",)
)
HELM_RELEASE = KubernetesType("kubernetes:helm.sh/v3:Release", {"compat": "true"})
"""A Helm release the provider installs with Helm's own library (hooks included)."""


class KubernetesResource(pulumi.CustomResource):
    """One resource of the Kubernetes provider, from its inputs in the API's own spelling (a
    manifest's `metadata`, `spec`, `data`, ...; a Release's `chart`, `maxHistory`, ...)."""

    def __init__(
        self,
        name: str,
        kubernetes_type: KubernetesType,
        inputs: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        for key, value in kubernetes_type.fixed_inputs.items():
            given = inputs.get(key, value)
            if given != value:
                raise ValueError(f"{kubernetes_type.token} {name!r}: {key} is {value!r}, not {given!r}")
        props: dict[str, Any] = {**inputs, **kubernetes_type.fixed_inputs}
        record(props)
        for key in kubernetes_type.secret_inputs:
            if props.get(key) is not None:
                props[key] = pulumi.Output.secret(props[key])
        # Merged in the generated classes' order: the caller's aliases come before the kind's.
        options = pulumi.ResourceOptions.merge(pulumi_kubernetes_utilities.get_resource_opts_defaults(), opts)
        if kubernetes_type.aliases:
            aliases = [pulumi.Alias(type_=token) for token in kubernetes_type.aliases]
            options = pulumi.ResourceOptions.merge(options, pulumi.ResourceOptions(aliases=aliases))
        if kubernetes_type.secret_inputs:
            secret = pulumi.ResourceOptions(additional_secret_outputs=list(kubernetes_type.secret_inputs))
            options = pulumi.ResourceOptions.merge(options, secret)
        super().__init__(kubernetes_type.token, name, props, options)
