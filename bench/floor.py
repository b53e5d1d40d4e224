"""The SDK floor: the same engine replaying a program's registrations through pulumi-kubernetes'
generated classes, with no program logic, as any Pulumi program registering these resources would."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from offline.engine import Registration

# -- the SDK floor -------------------------------------------------------------------------------

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _kwargs(inputs: dict[str, Any], skip: tuple[str, ...] = ("apiVersion", "kind")) -> dict[str, Any]:
    return {_SNAKE.sub("_", key).lower(): value for key, value in inputs.items() if key not in skip}


def _typed_class(token: str) -> Any:
    """`kubernetes:apps/v1:Deployment` -> pulumi_kubernetes.apps.v1.Deployment."""
    _, module, kind = token.split(":")
    group, version = module.split("/")
    return getattr(getattr(getattr(k8s, group.split(".")[0]), version), kind)


def _aliases(reg: Registration) -> list[pulumi.Alias]:
    """The aliases the program declared (a component's earlier type, a resource's earlier name);
    the ones the SDK derives for children are derived again by the replay."""
    out = []
    for described in reg.aliases:
        parts = dict(part.split("=", 1) for part in described.split(",") if "=" in part)
        if set(parts) - {"name", "type"} or not parts:
            continue
        out.append(pulumi.Alias(**{"type_" if key == "type" else key: value for key, value in parts.items()}))
    return out


def floor_program(registrations: list[Registration]) -> dict[str, Any]:
    """Register the same resources with the same URNs, parents, dependencies, providers and
    options, from their recorded inputs: the program's tree, without its configuration,
    validation, builders or composition logic (and without tuning anything)."""
    by_urn = {reg.urn: reg for reg in registrations}
    created: dict[str, pulumi.Resource] = {}

    def make(urn: str) -> pulumi.Resource | None:
        if urn in created or urn not in by_urn:
            return created.get(urn)
        reg = by_urn[urn]
        parent = make(reg.parent)
        depends = [r for r in (make(u) for u in reg.dependencies) if r is not None]
        provider = make(reg.provider.rpartition("::")[0]) if reg.provider else None
        assert provider is None or isinstance(provider, pulumi.ProviderResource)
        opts = pulumi.ResourceOptions(
            parent=parent,
            depends_on=depends or None,
            provider=provider,
            protect=reg.protect,
            retain_on_delete=reg.retain_on_delete or None,
            delete_before_replace=reg.delete_before_replace,
            replace_on_changes=reg.replace_on_changes or None,
            ignore_changes=reg.ignore_changes or None,
            custom_timeouts=pulumi.CustomTimeouts(**reg.custom_timeouts) if reg.custom_timeouts else None,
            import_=reg.import_id or None,
            aliases=_aliases(reg) or None,
        )
        created[urn] = register_generated(reg, opts)
        return created[urn]

    for reg in registrations:
        make(reg.urn)
    return {}


def register_generated(reg: Registration, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """One recorded registration, registered again through pulumi-kubernetes' generated classes
    (or `apiextensions.CustomResource`), as a program is usually written."""
    token = reg.type
    if not reg.custom:
        return pulumi.ComponentResource(token, reg.name, None, opts)
    if token == "pulumi:providers:kubernetes":
        accepted = inspect.signature(k8s.ProviderArgs.__init__).parameters
        # A provider's inputs are recorded as the engine gets them, booleans as strings.
        kwargs = {k: {"true": True, "false": False}.get(v, v) for k, v in _kwargs(reg.inputs).items() if k in accepted}
        return k8s.Provider(reg.name, **kwargs, opts=opts)
    if token == "kubernetes:helm.sh/v3:Release":
        return k8s.helm.v3.Release(reg.name, **_kwargs(reg.inputs, ("compat",)), opts=opts)
    if token.startswith(
        (
            "kubernetes:core/",
            "kubernetes:apps/",
            "kubernetes:scheduling.k8s.io/",
            "kubernetes:autoscaling/",
            "kubernetes:rbac.authorization.k8s.io/",
            "kubernetes:networking.k8s.io/",
        )
    ):
        return _typed_class(token)(reg.name, **_kwargs(reg.inputs), opts=opts)
    custom = k8s.apiextensions.CustomResourcePatch if token.endswith("Patch") else k8s.apiextensions.CustomResource
    return custom(
        reg.name,
        api_version=reg.inputs["apiVersion"],
        kind=reg.inputs["kind"],
        metadata=reg.inputs.get("metadata"),
        spec=reg.inputs.get("spec"),
        opts=opts,
    )
