"""`WorkloadSecrets`: Kubernetes Secrets that models reference, in each namespace that needs them.

Values come from encrypted Pulumi config and stay Pulumi secrets (encrypted in state, masked in
previews); pods reference them by `secretKeyRef` / `imagePullSecrets`, never by value.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pulumi

from components.inference.pod_template import SECRET_KEY
from components.kubernetes.resource import SECRET, KubernetesResource
from config.platform_labels import MANAGED_BY
from config.spec.images import ChartSource
from config.spec.platform import PlatformSpec
from config.spec.secrets import registries_needed, secrets_needed


def docker_config(server: str, username: str, password: str) -> str:
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return json.dumps({"auths": {server: {"username": username, "password": password, "auth": auth}}})


def registry_data(spec: PlatformSpec, registry: str) -> dict[str, str]:
    """`stringData` of the pull Secret of an entry of `registries`."""
    credential = spec.config.registries[registry]
    password = spec.config.secrets[credential.password_secret].get_secret_value()
    return {".dockerconfigjson": docker_config(credential.server, credential.username, password)}


def chart_login(spec: PlatformSpec, source: ChartSource) -> tuple[str, pulumi.Output[str]] | None:
    """Username and password (a Pulumi secret, so state, previews and renders mask it) the chart
    is pulled with, from its `registries` entry."""
    if source.credentials is None or source.credentials not in spec.config.registries:
        return None
    credential = spec.config.registries[source.credentials]
    secret = spec.config.secrets.get(credential.password_secret)
    if secret is None:
        return None
    return credential.username, pulumi.Output.secret(secret.get_secret_value())


def registry_secret(
    name: str, spec: PlatformSpec, registry: str, namespace: str, opts: pulumi.ResourceOptions
) -> KubernetesResource:
    """The pull Secret of an entry of `registries` in one namespace, named after the entry."""
    return _secret(name, {"name": registry, "namespace": namespace}, DOCKER_CONFIG, registry_data(spec, registry), opts)


def _secret(
    name: str, metadata: dict[str, str], secret_type: str, data: dict[str, str], opts: pulumi.ResourceOptions
) -> KubernetesResource:
    """A Secret whose every entry is a secret output from the start."""
    return KubernetesResource(
        name,
        SECRET,
        {
            "metadata": {**metadata, "labels": dict(MANAGED_BY)},
            "type": secret_type,
            "stringData": {key: pulumi.Output.secret(value) for key, value in data.items()},
        },
        opts,
    )


DOCKER_CONFIG = "kubernetes.io/dockerconfigjson"


def platform_pull_secret(
    spec: PlatformSpec, registry: str | None, namespace: str
) -> Callable[[str, pulumi.ResourceOptions], KubernetesResource] | None:
    """A maker of the pull Secret for a platform namespace, or None when no registry is set."""
    if registry is None:
        return None
    chosen = registry
    return lambda name, opts: registry_secret(name, spec, chosen, namespace, opts)


class WorkloadSecrets(pulumi.ComponentResource):
    by_namespace: dict[str, list[KubernetesResource]]
    """Namespace -> the Secrets created there (models depend on them)."""

    def __init__(
        self,
        name: str,
        spec: PlatformSpec,
        namespaces: dict[str, pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:secrets:WorkloadSecrets", name, None, opts)
        self.by_namespace = {}
        values = spec.config.secrets
        # (namespace, Secret name, name of the resource in earlier versions, Secret type, data)
        wanted: list[tuple[str, str, str, str, dict[str, str]]] = []
        for namespace, names in sorted(secrets_needed(spec).items()):
            for entry in sorted(names):
                data = {SECRET_KEY: values[entry].get_secret_value()}
                wanted.append((namespace, entry, f"{name}-{namespace}-{entry}", "Opaque", data))
        for namespace, registries in sorted(registries_needed(spec).items()):
            for registry in sorted(registries):
                earlier = f"{name}-{namespace}-registry-{registry}"
                wanted.append((namespace, registry, earlier, DOCKER_CONFIG, registry_data(spec, registry)))
        for namespace, secret_name, earlier, kind, data in wanted:
            # Namespace and Secret name are joined by '/', which neither can contain, so no two
            # Secrets share a resource name (`a` + `b-c` and `a-b` + `c` once did).
            secret = _secret(
                f"{name}/{namespace}/{secret_name}",
                {"name": secret_name, "namespace": namespace},
                kind,
                data,
                pulumi.ResourceOptions(
                    parent=self, depends_on=[namespaces[namespace]], aliases=[pulumi.Alias(name=earlier)]
                ),
            )
            self.by_namespace.setdefault(namespace, []).append(secret)
        self.register_outputs({})
