"""Which access modes each cloud's block-storage CSI driver provisions. A claim asking for another
mode is never bound: the driver refuses to create its volume, and every pod that mounts it stays
Pending. Filesystem volumes only (a model mounts its weights as files)."""

from __future__ import annotations

from typing import Final

BLOCK_STORAGE_ACCESS_MODES: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    # aws-ebs-csi-driver `pkg/driver/controller.go` (`isValidVolumeCapabilities`): ReadWriteOnce and
    # ReadWriteOncePod; multi-attach (ReadWriteMany) only for io2 volumes in Block mode.
    "ebs.csi.aws.com": ("Amazon EBS", ("ReadWriteOnce", "ReadWriteOncePod")),
    # GCE PD CSI driver (GKE's `standard-rwo`, `premium-rwo`): one node read-write, or many nodes
    # read-only (cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/readonlymany-disks).
    "pd.csi.storage.gke.io": (
        "a Compute Engine persistent disk",
        ("ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany"),
    ),
    # Azure Disk CSI driver: one node (shared disks only in Block mode).
    "disk.csi.azure.com": ("an Azure managed disk", ("ReadWriteOnce", "ReadWriteOncePod")),
}
"""Provisioner -> (what it makes, the access modes it provisions for a filesystem volume)."""

DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
"""A StorageClass annotated `"true"` serves claims that name none (kubernetes admission plugin
DefaultStorageClass)."""
