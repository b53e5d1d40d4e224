"""Kubernetes and pulumi-kubernetes annotations and limits the platform relies on."""

from __future__ import annotations

from typing import Final

MULTUS_ANNOTATION: Final = "k8s.v1.cni.cncf.io/networks"
WAIT_FOR_ANNOTATION: Final = "pulumi.com/waitFor"
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"
# pulumi-kubernetes waits up to 10 minutes for Deployments and Services to become ready.
SKIP_AWAIT_ANNOTATION: Final = "pulumi.com/skipAwait"
PRIORITY_VALUE_MAX: Final = 1_000_000_000  # user-defined classes; larger values are reserved
