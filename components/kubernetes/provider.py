"""The explicit Kubernetes provider every resource of the stack uses."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from config.errors import ConfigError, Problem
from config.sections.cluster import ClusterConfig


class BoundaryRefusedError(ConfigError, pulumi.RunError):
    """The refusal as the provider's failed input raises it: a `RunError`, which the engine prints
    without a traceback, and the `ConfigError` the offline engine reports (the SDK re-raises the
    first failed registration in place of the program's own exception)."""


class BoundaryGate:
    """Holds every Kubernetes object back until the tenant boundary is proven on all of them.

    The provider's identity waits on the gate, and every object waits on its provider, so the
    SDK sends none of them to the engine before `judge` (which runs once the program has built
    everything; registrations only go out after the program's body returns). An object that
    crosses the boundary, or a program that stops before judging, fails the provider's inputs:
    no object is sent, in `preview` or in `up`, and the engine reports the same message as the
    program."""

    def __init__(self) -> None:
        self._error: Exception | None = pulumi.RunError(
            "the program stopped before the tenant boundary was proven: nothing was registered"
        )

    def judge(self, problems: Sequence[Problem]) -> None:
        """Let the objects through, or raise (and keep them back for good)."""
        errors = [p for p in problems if p.severity == "error"]
        if not errors:
            self._error = None
            return
        self._error = BoundaryRefusedError(errors)
        raise ConfigError(errors)

    def through(self, value: str) -> str:
        if self._error is not None:
            raise self._error
        return value


def kubernetes_provider(
    name: str,
    cluster: ClusterConfig,
    stack: str,
    opts: pulumi.ResourceOptions | None = None,
    gate: BoundaryGate | None = None,
) -> k8s.Provider:
    """An explicit provider ignores `kubernetes:*` stack config, so everything comes from
    `cluster`. `cluster_identifier` pins the provider's identity: pointing the stack at a new
    kubeconfig path or context for the same cluster then updates nothing. It defaults to the stack
    name, which never changes for a stack, rather than to the display name `cluster.name`; it also
    keeps a change of the provider's settings (`helmReleaseSettings`) an update, never a
    replacement (pulumi-kubernetes `provider/pkg/provider/provider.go`, DiffConfig)."""
    storage = cluster.helm_release_storage
    kubeconfig = pulumi.Output.secret(cluster.kubeconfig.get_secret_value()) if cluster.kubeconfig else None
    return k8s.Provider(
        name,
        kubeconfig=kubeconfig,
        context=cluster.context,
        cluster_identifier=pulumi.Output.from_input(cluster.identifier or stack).apply(gate.through)
        if gate is not None
        else cluster.identifier or stack,
        # Unset unless the stack chooses, so a stack that never did keeps its provider unchanged.
        helm_release_settings=k8s.HelmReleaseSettingsArgs(driver=storage) if storage else None,
        # A rotated secret value updates its Secret in place; by default the provider replaces it,
        # deleting the named Secret before creating it again, a window in which a pod starting
        # finds none (pulumi-kubernetes provider/pkg/provider/diff.go, since 4.18.0).
        enable_secret_mutable=True,
        opts=opts,
    )
