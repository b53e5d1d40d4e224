"""Preflight of the weight claims: a claim a model mounts that the stack does not create must
exist, or every pod of the model stays Pending (the scheduler's volume binding finds no claim)."""

from __future__ import annotations

from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report


def missing_claims(spec: PlatformSpec, state: ClusterState) -> dict[str, tuple[str, str]]:
    """Model -> (namespace, claim) it mounts that neither the cluster has nor the stack creates."""
    present = {
        ((c.get("metadata") or {}).get("namespace"), (c.get("metadata") or {}).get("name"))
        for c in state.persistent_volume_claims
    }
    out: dict[str, tuple[str, str]] = {}
    for model in spec.models.values():
        pvc = model.config.source.pvc
        if pvc is None or pvc.create is not None:
            continue
        if (model.namespace, pvc.claim_name) not in present:
            out[model.name] = (model.namespace, pvc.claim_name)
    return out


def check_claims(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    for model, (namespace, claim) in sorted(missing_claims(spec, state).items()):
        report.add(
            Finding(
                "claim-missing",
                "error",
                f"models.{model}.source.pvc.claimName",
                f"model `{model}` mounts claim `{claim}`, which does not exist in namespace `{namespace}`: its pods "
                "would stay Pending",
                "create the claim (or let the stack create it: `source.pvc.create` with its size and StorageClass), "
                "or fix the name",
            )
        )
