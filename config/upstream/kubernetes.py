"""Kubernetes and pulumi-kubernetes annotations and limits the platform relies on."""

from __future__ import annotations

from typing import Final

MULTUS_ANNOTATION: Final = "k8s.v1.cni.cncf.io/networks"
WAIT_FOR_ANNOTATION: Final = "pulumi.com/waitFor"
"""The provider waits for it (`jsonpath=` or `condition=`, on any kind) until the resource's
custom timeout, and fails the step naming the object (pulumi-kubernetes provider/pkg/metadata/
overrides.go, pkg/await/condition)."""
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"
# pulumi-kubernetes waits up to 10 minutes for Deployments and Services to become ready.
SKIP_AWAIT_ANNOTATION: Final = "pulumi.com/skipAwait"
PRIORITY_VALUE_MAX: Final = 1_000_000_000  # user-defined classes; larger values are reserved

# Pod Security admission (built into the API server, on by default since Kubernetes 1.25): a
# namespace's `pod-security.kubernetes.io/<mode>` label holds a level; `enforce` refuses pods
# beyond it, `audit` records them, `warn` tells the client. `<mode>-version` pins the standard's
# version (default `latest`). kubernetes staging/src/k8s.io/pod-security-admission/api/constants.go.
PSA_LABEL_PREFIX: Final = "pod-security.kubernetes.io/"
PSA_MODES: Final = ("enforce", "audit", "warn")
PSA_LEVELS: Final = ("restricted", "baseline", "privileged")
"""Most to least strict."""
# Set by the API server to the namespace's own name on every create and update, whatever a client
# sends (kubernetes pkg/registry/core/namespace/strategy.go, `Canonicalize`; GA since 1.22): the
# one namespace label nobody can forge. k8s.io/api core/v1/well_known_labels.go.
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
