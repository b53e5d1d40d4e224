"""The read-only access a preview needs: exactly what `pulumi preview --refresh` and the preflight
read on the cluster, for one stack, as RBAC objects.

What is read, from the code that reads it:
- refresh GETs every object the stack manages, patches included (pulumi-kubernetes
  `kubeProvider.Read`); a Deployment's read awaiter LISTs its ReplicaSets, Pods and
  PersistentVolumeClaims, a Service's its Endpoints (`provider/pkg/await/deployment.go`,
  `service.go`); a Helm release is read from Helm's storage, a LIST of the ConfigMaps
  (`cluster.helmReleaseStorage: configmap`) or of the Secrets in the release's namespace (helm
  `pkg/storage/driver/cfgmaps.go`, `secrets.go`: Query by label, which RBAC cannot narrow);
- the preflight and the what-if LIST the kinds in `live.cluster_state.KINDS` across the cluster
  (Pods among them: what runs where holds nodes);
- discovery and `/openapi/v2` are non-resource URLs that Kubernetes' default `system:discovery`
  role already grants every authenticated identity.

So the ClusterRole has `get`/`list` on the stack's cluster-scoped kinds and the kinds the preflight
and the what-if list (Pods, never Secrets), and everything else (ConfigMaps, monitors) is granted
only by Roles in the namespaces the stack manages. Secrets are granted by name: `get` on exactly
the Secrets the stack manages, so no other Secret of those namespaces (a webhook's TLS key, a
token) is readable, unless Helm keeps its records among them (`helmReleaseStorage` unset or
`secret`).
No `*`, no subresource (`nodes/proxy` allows command execution in pods, `pods/log` reads logs), no
`watch` (neither preview nor preflight watches), and no write verb: a server-side dry run needs
`patch`, so previews with this role fall back to a client-side diff (`kubeProvider.Update`, a
Forbidden dry run is not an error).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from config.project import PROJECT
from config.schema.names import dns_label_problem, dns_subdomain_problem
from live.cluster_state import KINDS
from offline.render import StackRender
from offline.schemas import crd_names, schema_dirs

ROLE_NAME = f"{PROJECT}-preview-reader"
VERBS = ("get", "list")

# Kinds of the Kubernetes API the stack renders: (group, kind) -> (resource, namespaced).
BUILTIN: dict[tuple[str, str], tuple[str, bool]] = {
    ("", "Namespace"): ("namespaces", False),
    ("", "Node"): ("nodes", False),
    ("", "Service"): ("services", True),
    ("", "Secret"): ("secrets", True),
    ("", "ConfigMap"): ("configmaps", True),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("apps", "Deployment"): ("deployments", True),
    ("apps", "StatefulSet"): ("statefulsets", True),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("autoscaling", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("networking.k8s.io", "NetworkPolicy"): ("networkpolicies", True),
}
# What a kind's read awaiter lists in the object's namespace (pulumi-kubernetes provider/pkg/await).
AWAITER_LISTS: dict[str, list[tuple[str, str]]] = {
    "Deployment": [("apps", "replicasets"), ("", "pods"), ("", "persistentvolumeclaims")],
    "StatefulSet": [("", "pods")],
    "Service": [("", "endpoints")],
}


class AccessError(Exception):
    """A rendered kind whose API resource the program does not know (add it to BUILTIN)."""


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    namespace: str | None = None

    @classmethod
    def parse(cls, text: str) -> Subject:
        """`ServiceAccount:<namespace>/<name>`, `User:<name>` or `Group:<name>`."""
        kind, _, rest = text.partition(":")
        if kind == "ServiceAccount" and "/" in rest:
            namespace, _, name = rest.partition("/")
            # The API server takes only these names: a namespace is a DNS label, a ServiceAccount
            # a DNS subdomain.
            if dns_label_problem(namespace) or dns_subdomain_problem(name):
                raise ValueError(f"{text!r}: the namespace must be a DNS label and the name a DNS subdomain")
            return cls(kind, name, namespace)
        if kind in ("User", "Group") and rest and rest.isprintable() and len(rest) <= 253:
            return cls(kind, rest)
        raise ValueError(f"{text!r}: use ServiceAccount:<namespace>/<name>, User:<name> or Group:<name>")

    def manifest(self) -> dict[str, Any]:
        if self.kind == "ServiceAccount":
            return {"kind": self.kind, "name": self.name, "namespace": self.namespace}
        return {"kind": self.kind, "name": self.name, "apiGroup": "rbac.authorization.k8s.io"}


DEFAULT_SUBJECT = Subject("ServiceAccount", f"{PROJECT}-preview", "kube-system")


Grants = dict[tuple[str, str], set[str]]
"""(API group, resource) -> verbs."""


def _rules(grants: Grants, secrets: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Grants as RBAC rules, one per API group and set of verbs, sorted (stable output for review),
    then `get` on the named `secrets`."""
    by_rule: dict[tuple[str, tuple[str, ...]], set[str]] = defaultdict(set)
    for (group, resource), verbs in grants.items():
        by_rule[(group, tuple(v for v in VERBS if v in verbs))].add(resource)
    rules: list[dict[str, Any]] = [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verbs)}
        for (group, verbs), resources in sorted(by_rule.items())
    ]
    if secrets:
        rules.append({"apiGroups": [""], "resources": ["secrets"], "resourceNames": sorted(secrets), "verbs": ["get"]})
    return rules


def release_storage(render: StackRender) -> str:
    """The resource Helm keeps its release records in: the provider's driver, `secret` unless set
    (pulumi-kubernetes `provider/pkg/provider/provider.go`, helmReleaseSettings)."""
    return "configmaps" if render.spec.config.cluster.helm_release_storage == "configmap" else "secrets"


def preview_access(render: StackRender, subject: Subject = DEFAULT_SUBJECT) -> list[dict[str, Any]]:
    """The RBAC objects (and the ServiceAccount, when the subject is one) of the preview identity."""
    known = {**BUILTIN, **crd_names(d for d in schema_dirs(render.spec).values() if d is not None)}
    cluster: Grants = defaultdict(set)
    namespaced: dict[str, Grants] = defaultdict(lambda: defaultdict(set))
    secrets: dict[str, set[str]] = defaultdict(set)
    for kind in KINDS:  # the preflight's cluster-wide lists
        cluster[(kind.group, kind.plural)].add("list")
    for obj in render.rendered.objects:
        group = str(obj.manifest.get("apiVersion", "")).rpartition("/")[0]
        resource = known.get((group, obj.kind))
        if resource is None:
            raise AccessError(f"the stack renders {obj.kind} ({group or 'core'}), whose API resource is not known")
        plural, is_namespaced = resource
        if (group, obj.kind) == ("", "Secret") and obj.namespace:
            secrets[obj.namespace].add(obj.name)  # by name alone; no awaiter lists Secrets
        elif is_namespaced and obj.namespace:
            namespaced[obj.namespace][(group, plural)].add("get")
            for awaited in AWAITER_LISTS.get(obj.kind, []):
                namespaced[obj.namespace][awaited].add("list")
        elif not is_namespaced:
            cluster[(group, plural)].add("get")
    storage = release_storage(render)
    for release in render.rendered.releases:
        namespaced[str(release.data["namespace"])][("", storage)].add("list")
    # Not `managed-by`: the stack does not manage these objects (an administrator applies them), and
    # the preflight counts objects with that label as the stack's.
    meta = {"labels": {"app.kubernetes.io/part-of": PROJECT}}
    documents: list[dict[str, Any]] = []
    if subject.kind == "ServiceAccount":
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": subject.name, "namespace": subject.namespace, **meta},
            }
        )
    documents += [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": ROLE_NAME, **meta},
            "rules": _rules(cluster),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ROLE_NAME, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE_NAME},
            "subjects": [subject.manifest()],
        },
    ]
    for namespace in sorted({*namespaced, *secrets}):
        documents += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": ROLE_NAME, "namespace": namespace, **meta},
                "rules": _rules(namespaced[namespace], secrets[namespace]),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": ROLE_NAME, "namespace": namespace, **meta},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME},
                "subjects": [subject.manifest()],
            },
        ]
    return documents
