"""The CustomResourceDefinitions a sandbox serves: the vendored ones of what the stack renders
(Volcano, LWS, the inference extension, Gateway API, both monitoring backends, KEDA, Istio's
DestinationRule), and schema-less ones for kinds Volcano's and LWS's processes only watch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from config.upstream.vendored import (
    GATEWAY_API,
    GATEWAY_API_INFERENCE_EXTENSION,
    ISTIO,
    KEDA,
    PROMETHEUS_ENGINE,
    PROMETHEUS_OPERATOR,
    newest_vendored,
)

PROJECT = Path(__file__).resolve().parents[1]
VOLCANO_CRDS = PROJECT / "upstream" / "volcano-1.15.0" / "crd"
LWS_CRDS = PROJECT / "upstream" / "lws-0.10.0" / "crd"


def _newest_crds(project: str) -> Path:
    newest = newest_vendored(project)
    assert newest is not None, f"no upstream/{project}-<version>/ (`make upstream-generated`)"
    return newest[1] / "crd"


# The generated CRDs of what a cluster brings for the inference gateway (InferencePool,
# InferenceObjective; GatewayClass, Gateway, HTTPRoute, ReferenceGrant): the versions the rendered
# objects are validated against.
INFERENCE_EXTENSION_CRDS = _newest_crds(GATEWAY_API_INFERENCE_EXTENSION)
GATEWAY_API_CRDS = _newest_crds(GATEWAY_API)
# What a cluster with monitoring, autoscaling and an Istio gateway brings: prometheus-operator's
# monitors and rules (or, on GKE, Managed Service for Prometheus'), KEDA's ScaledObject, Istio's
# DestinationRule (of its file of every CRD).
MONITORING_CRDS = _newest_crds(PROMETHEUS_OPERATOR)
MANAGED_MONITORING_CRDS = _newest_crds(PROMETHEUS_ENGINE)
AUTOSCALING_CRDS = _newest_crds(KEDA)
ISTIO_CRDS = _newest_crds(ISTIO)
ISTIO_KINDS = ("destinationrules.networking.istio.io",)


def schemaless_crd(group: str, version: str, kind: str, plural: str, scope: str) -> dict[str, Any]:
    """A CRD of one kind that accepts any object: for kinds Volcano's and LWS's processes watch
    and the platform never writes, which the vendored CRDs (those the stack validates against)
    do not cover."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


WATCHED_ONLY_CRDS = (
    # the Queue controller's Commands (its `QueueCommandSync` gate is on by default,
    # pkg/features/volcano_features.go)
    schemaless_crd("bus.volcano.sh", "v1alpha1", "Command", "commands", "Namespaced"),
    # the scheduler cache waits for its Numatopology informer (pkg/scheduler/cache/cache.go)
    schemaless_crd("nodeinfo.volcano.sh", "v1alpha1", "Numatopology", "numatopologies", "Cluster"),
    # the LWS controller of v0.9.0 also runs its DisaggregatedSet controller, and exits when that
    # kind's cache never syncs (cmd/main.go)
    schemaless_crd("disaggregatedset.x-k8s.io", "v1", "DisaggregatedSet", "disaggregatedsets", "Namespaced"),
)


def crd_documents() -> list[dict[str, Any]]:
    """Every CRD the sandbox installs (a fresh copy each time)."""
    folders = (
        VOLCANO_CRDS,
        LWS_CRDS,
        INFERENCE_EXTENSION_CRDS,
        GATEWAY_API_CRDS,
        MONITORING_CRDS,
        MANAGED_MONITORING_CRDS,
        AUTOSCALING_CRDS,
    )
    paths = sorted(path for folder in folders for path in folder.glob("*.yaml"))
    crds = [yaml.safe_load(path.read_text()) for path in paths]
    crds += [
        doc
        for path in ISTIO_CRDS.glob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("metadata", {}).get("name") in ISTIO_KINDS
    ]
    crds.extend(yaml.safe_load(yaml.safe_dump(crd)) for crd in WATCHED_ONLY_CRDS)
    return crds
