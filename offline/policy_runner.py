"""Run the policy pack offline over a rendered stack, calling each policy's `validate` directly (what
`pulumi preview --policy-pack policy` does with the real engine)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from offline.manifests import Rendered
from policy.pack import POLICIES


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    """`mandatory` or `advisory`."""
    subject: str
    message: str

    def __str__(self) -> str:
        return f"[{self.policy}] {self.subject}: {self.message}"


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def policy_resources(rendered: Rendered) -> list[tuple[str, PolicyResource]]:
    """(file, resource) for every object and Helm release, as the engine would present them."""
    out: list[tuple[str, PolicyResource]] = []
    for obj in rendered.objects:
        out.append(
            (
                obj.file,
                PolicyResource(
                    obj.type, obj.manifest, obj.urn, obj.urn.split("::")[-1], _options(), None, None, [], {}
                ),
            )
        )
    for release in rendered.releases:
        props: dict[str, Any] = {"chart": release.data["chart"], "values": release.data["values"]}
        out.append(
            (
                release.file,
                PolicyResource(
                    "kubernetes:helm.sh/v3:Release",
                    props,
                    release.urn,
                    release.urn.split("::")[-1],
                    _options(),
                    None,
                    None,
                    [],
                    {},
                ),
            )
        )
    return out


def run_policies(rendered: Rendered) -> list[Violation]:
    """Every violation of every policy, each named by the file of the object it concerns."""
    resources = policy_resources(rendered)
    violations: list[Violation] = []
    for policy in POLICIES:
        level = "advisory" if policy.enforcement_level == EnforcementLevel.ADVISORY else "mandatory"

        def reporter(subject: str, name: str = policy.name, lvl: str = level) -> ReportViolation:
            def report(message: str, urn: str | None = None) -> None:
                violations.append(Violation(name, lvl, subject, message))

            return report

        if isinstance(policy, ResourceValidationPolicy):
            validators = policy.validate if isinstance(policy.validate, list) else [policy.validate]
            for file, resource in resources:
                args = ResourceValidationArgs(
                    resource.resource_type, resource.props, resource.urn, resource.name, resource.opts, None
                )
                for validate in validators:
                    if validate is not None:
                        validate(args, reporter(file))
        elif isinstance(policy, StackValidationPolicy) and policy.validate is not None:
            policy.validate(StackValidationArgs([r for _, r in resources]), reporter("stack"))
    return violations
