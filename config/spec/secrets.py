"""Which Kubernetes Secrets the workloads need, per namespace, and the names they would take.

Entries of `secrets` that models read (env values, hub tokens) and `registries` they pull from
each become a Secret named after the entry in every namespace that uses it. A Secret is managed by
one resource only, so two entries that would take the same name in one namespace are refused."""

from __future__ import annotations

from config.sections.models import SecretRef
from config.spec.images import router_pull_secret, sidecar_pull_secret
from config.spec.platform import PlatformSpec


def secrets_needed(spec: PlatformSpec) -> dict[str, set[str]]:
    """Namespace -> entries of `secrets` its models read (env and hub tokens)."""
    needed: dict[str, set[str]] = {}
    for model in spec.models.values():
        envs = [model.config.env, *(view.config.env for view in model.role_views)]
        names = {v.secret for env in envs for v in env.values() if isinstance(v, SecretRef)}
        hub = model.config.source.hub
        if hub and hub.token_secret:
            names.add(hub.token_secret)
        if names:
            needed.setdefault(model.namespace, set()).update(names)
    return needed


def registries_needed(spec: PlatformSpec) -> dict[str, set[str]]:
    """Namespace -> registries its models (their decode sidecars, and the routers of the models
    behind the gateway) pull from."""
    needed: dict[str, set[str]] = {}
    for model in spec.models.values():
        if model.config.image_pull_secrets:
            needed.setdefault(model.namespace, set()).update(model.config.image_pull_secrets)
        sidecar = sidecar_pull_secret(spec.config, model.config) if model.disaggregated else None
        if sidecar is not None:
            needed.setdefault(model.namespace, set()).add(sidecar)
    router = router_pull_secret(spec.config) if spec.gateway is not None else None
    if router is not None and spec.gateway is not None:
        for name in spec.gateway.models:
            needed.setdefault(spec.models[name].namespace, set()).add(router)
    return needed


def platform_pull_secrets(spec: PlatformSpec) -> frozenset[str]:
    """Logins the platform pulls its own images in tenants' namespaces with (the routers' and the
    routing sidecars', from the mirror): a tenant's pods may pull with them, never read them."""
    pull = spec.config.cluster.mirror.pull_secret
    return frozenset({pull}) if pull is not None else frozenset()
