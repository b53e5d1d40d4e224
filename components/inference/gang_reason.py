"""Why a gang did not start, said where `pulumi up` gives up on it.

The provider waits for a LeaderWorkerSet's `Available` condition (`pulumi.com/waitFor`) and, when
the budget is spent, fails with only "timed out waiting for the condition": the reason is on the
model's PodGroup, where Volcano's scheduler writes it (an `Unschedulable` condition whose message
says how many tasks of the gang could not be placed and why; volcano v1.15.1
pkg/scheduler/framework/job_updater.go and api/job_info.go). An error hook on the LeaderWorkerSet
(Pulumi's `on_error`, called by the engine when the step fails) reads that PodGroup with
`kubectl`, with the kubeconfig and context the stack's provider uses, and reports its phase and
conditions as an error of the update, with the `explain` command that answers the same question
offline. Without `kubectl`, or when the read fails, the error still names the PodGroup and the
command that shows it. The hook never retries the step.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pulumi

from config.upstream.volcano import PODGROUP_PLURAL

READ_TIMEOUT_SECONDS = 20
MESSAGE_LIMIT = 600
"""Volcano's condition messages list every pending task's reason; the first few hundred
characters say it."""


@dataclass(frozen=True)
class ClusterAccess:
    """How the stack's provider reaches the cluster: a kubeconfig path or contents, a context."""

    kubeconfig: str | None = None
    context: str | None = None

    @contextmanager
    def kubectl_args(self) -> Iterator[list[str]]:
        """`--kubeconfig`/`--context` for kubectl; kubeconfig contents go to a private temporary
        file for the one call."""
        args = [] if self.context is None else ["--context", self.context]
        if self.kubeconfig is None:
            yield args
            return
        if "\n" not in self.kubeconfig and os.path.exists(os.path.expanduser(self.kubeconfig)):
            yield ["--kubeconfig", os.path.expanduser(self.kubeconfig), *args]
            return
        with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig") as file:
            file.write(self.kubeconfig)
            file.flush()
            yield ["--kubeconfig", file.name, *args]


def podgroup_state(podgroup: dict[str, Any]) -> str:
    """A PodGroup's phase and the conditions Volcano set on it, newest last (pure)."""
    status = podgroup.get("status") or {}
    said = [f"phase {status.get('phase') or 'unset'}"]
    for condition in status.get("conditions") or []:
        if condition.get("status") != "True":
            continue
        text = f"{condition.get('type')}"
        if condition.get("reason"):
            text += f" ({condition['reason']})"
        if condition.get("message"):
            message = str(condition["message"])
            text += ": " + (message if len(message) <= MESSAGE_LIMIT else message[:MESSAGE_LIMIT] + "…")
        said.append(text)
    return "; ".join(said)


def read_podgroup(access: ClusterAccess, namespace: str, name: str) -> str | None:
    """The PodGroup's state as `podgroup_state` says it, or None when it cannot be read."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    with access.kubectl_args() as args:
        try:
            result = subprocess.run(
                [kubectl, *args, "get", PODGROUP_PLURAL, name, "-n", namespace, "-o", "json"],
                capture_output=True,
                text=True,
                timeout=READ_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    if result.returncode != 0:
        return None
    try:
        return podgroup_state(json.loads(result.stdout))
    except (ValueError, AttributeError, TypeError):
        return None


def gang_failure_message(
    workload: str, namespace: str, podgroup: str, state: str | None, model: str, stack: str
) -> str:
    """What the error says: the workload, its PodGroup and why it waits, and where to ask (pure)."""
    where = f"PodGroup {namespace}/{podgroup}"
    found = (
        f"{where}: {state}"
        if state is not None
        else f"{where} could not be read (`kubectl get {PODGROUP_PLURAL} {podgroup} -n {namespace} -o yaml` shows it)"
    )
    return (
        f"LeaderWorkerSet {namespace}/{workload} did not run within its budget "
        f"(`startup.placeTimeoutSeconds` + `startup.loadTimeoutSeconds`); {found}. "
        f"Why the scheduler leaves it waiting: `volcano-platform explain {model} --stack {stack}`."
    )


def gang_error_hook(
    access: ClusterAccess, namespace: str, workload: str, podgroup: str, model: str
) -> pulumi.ResourceOptions:
    """Resource options with the `on_error` hook that reports the PodGroup when the workload's
    step fails."""

    def report(args: pulumi.ErrorHookArgs) -> bool:
        state = read_podgroup(access, namespace, podgroup)
        pulumi.log.error(gang_failure_message(workload, namespace, podgroup, state, model, pulumi.get_stack()))
        return False

    hook = pulumi.ErrorHook(f"gang-reason-{namespace}-{workload}", report)
    return pulumi.ResourceOptions(hooks=pulumi.ResourceHookBinding(on_error=[hook]))
