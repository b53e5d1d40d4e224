"""`WorkloadSecrets`: Kubernetes Secrets that models reference, in each namespace that needs them.

Values come from encrypted Pulumi config and stay Pulumi secrets (encrypted in state, masked in
previews); pods reference them by `secretKeyRef` / `imagePullSecrets`, never by value.
"""

from __future__ import annotations

import base64
import json

import pulumi
import pulumi_kubernetes as k8s

from components.labels import MANAGED_BY
from components.pod_template import SECRET_KEY
from config.models import SecretRef
from config.spec import PlatformSpec


def secrets_needed(spec: PlatformSpec) -> dict[str, set[str]]:
    """Namespace -> entries of `secrets` its models read (env and hub tokens)."""
    needed: dict[str, set[str]] = {}
    for model in spec.models.values():
        names = {v.secret for v in model.config.env.values() if isinstance(v, SecretRef)}
        hub = model.config.source.hub
        if hub and hub.token_secret:
            names.add(hub.token_secret)
        if names:
            needed.setdefault(model.namespace, set()).update(names)
    return needed


def registries_needed(spec: PlatformSpec) -> dict[str, set[str]]:
    """Namespace -> registries its models pull from."""
    needed: dict[str, set[str]] = {}
    for model in spec.models.values():
        if model.config.image_pull_secrets:
            needed.setdefault(model.namespace, set()).update(model.config.image_pull_secrets)
    return needed


def docker_config(server: str, username: str, password: str) -> str:
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return json.dumps({"auths": {server: {"username": username, "password": password, "auth": auth}}})


class WorkloadSecrets(pulumi.ComponentResource):
    by_namespace: dict[str, list[k8s.core.v1.Secret]]
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
        # (namespace, resource-name suffix, Secret name, Secret type, data)
        wanted: list[tuple[str, str, str, str, dict[str, str]]] = []
        for namespace, names in sorted(secrets_needed(spec).items()):
            for entry in sorted(names):
                wanted.append((namespace, entry, entry, "Opaque", {SECRET_KEY: values[entry].get_secret_value()}))
        for namespace, registries in sorted(registries_needed(spec).items()):
            for registry in sorted(registries):
                credential = spec.config.registries[registry]
                password = values[credential.password_secret].get_secret_value()
                config_json = docker_config(credential.server, credential.username, password)
                wanted.append(
                    (
                        namespace,
                        f"registry-{registry}",
                        registry,
                        "kubernetes.io/dockerconfigjson",
                        {".dockerconfigjson": config_json},
                    )
                )
        for namespace, suffix, secret_name, kind, data in wanted:
            secret = k8s.core.v1.Secret(
                f"{name}-{namespace}-{suffix}",
                metadata={"name": secret_name, "namespace": namespace, "labels": dict(MANAGED_BY)},
                type=kind,
                string_data={key: pulumi.Output.secret(value) for key, value in data.items()},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespaces[namespace]]),
            )
            self.by_namespace.setdefault(namespace, []).append(secret)
        self.register_outputs({})
