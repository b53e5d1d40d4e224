"""Preflight of the weight claims: a claim a model mounts that the stack does not create must
exist, or every pod of the model stays Pending (the scheduler's volume binding finds no claim); a
claim the stack creates must ask for an access mode its StorageClass's driver provisions, or it is
never bound and the pods stay Pending just the same."""

from __future__ import annotations

from config.spec.platform import PlatformSpec
from config.upstream.storage import BLOCK_STORAGE_ACCESS_MODES, DEFAULT_CLASS_ANNOTATION
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


def check_claim_access_modes(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    """A claim the stack creates on a block-storage class (EBS) with an access mode its driver
    does not provision: the weights' default `ReadWriteMany` on EKS's default class is the
    common case."""
    classes = {(c.get("metadata") or {}).get("name"): c for c in state.storage_classes}
    default = next(
        (
            name
            for name, c in classes.items()
            if (c.get("metadata") or {}).get("annotations", {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
        ),
        None,
    )
    for model in spec.models.values():
        pvc = model.config.source.pvc
        if pvc is None or pvc.create is None:
            continue
        name = pvc.create.storage_class or default
        provisioner = str((classes.get(name) or {}).get("provisioner", ""))
        if provisioner not in BLOCK_STORAGE_ACCESS_MODES:
            continue
        what, modes = BLOCK_STORAGE_ACCESS_MODES[provisioner]
        if pvc.create.access_mode in modes:
            continue
        named = f"StorageClass `{name}`" + ("" if pvc.create.storage_class else " (the cluster's default)")
        report.add(
            Finding(
                "claim-access-mode",
                "error",
                f"models.{model.name}.source.pvc.create.accessMode",
                f"claim `{pvc.claim_name}` asks for `{pvc.create.access_mode}` on {named}, {what} (`{provisioner}`), "
                f"which provisions only {', '.join(f'`{m}`' for m in modes)}: the claim is never bound and the "
                "model's pods stay Pending",
                "use a StorageClass of a shared file system for weights many pods read (EFS, FSx for Lustre) as "
                "`storageClass`, or an access mode it provisions",
            )
        )
