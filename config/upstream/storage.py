"""Which access modes a cloud's block-storage CSI driver provisions (those whose limits are sourced
here). A claim asking for another mode is never bound: the driver refuses to create its volume,
and every pod that mounts it stays Pending. Filesystem volumes only (a model mounts its weights
as files)."""

from __future__ import annotations

from typing import Final

BLOCK_STORAGE_ACCESS_MODES: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    # aws-ebs-csi-driver `docs/multi-attach.md`: an EBS volume attaches to one node; multi-attach
    # (`ReadWriteMany`) only for io2 volumes in Block mode.
    "ebs.csi.aws.com": ("Amazon EBS", ("ReadWriteOnce", "ReadWriteOncePod")),
}
"""Provisioner -> (what it makes, the access modes it provisions for a filesystem volume)."""

DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
"""A StorageClass annotated `"true"` serves claims that name none (kubernetes admission plugin
DefaultStorageClass)."""
