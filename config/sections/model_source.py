"""Where a model's weights come from: one volume (NFS, a PersistentVolumeClaim the stack may create,
a host path) or the Hugging Face hub, and the path checks every mounted path shares."""

from typing import Annotated, Literal, Self

from pydantic import AfterValidator, model_validator

from config.schema.base import ConfigModel, invalid
from config.schema.names import DnsSubdomain
from config.schema.quantity import Quantity, quantity_value


def path_problem(path: str) -> str | None:
    """Absolute, and no `..` component (which could climb out of an allowed directory)."""
    if not path.startswith("/"):
        return "is not absolute"
    if ".." in path.split("/"):
        return "contains `..`"
    return None


def _absolute(path: str) -> str:
    if problem := path_problem(path):
        raise invalid(f"`{path}` {problem}", "write an absolute path without `..`, e.g. `/data/models`")
    return path


AbsolutePath = Annotated[str, AfterValidator(_absolute)]
"""A path reported at its own key when it is relative or climbs with `..`."""


class NfsVolume(ConfigModel):
    server: str
    """NFS server address."""
    path: str
    """Exported path."""


class ClaimTemplate(ConfigModel):
    """A PersistentVolumeClaim the stack creates for the weights (on a cloud: a file system such as
    EFS, FSx for Lustre or Filestore through its CSI driver's StorageClass)."""

    size: Quantity
    """Requested capacity, e.g. `2Ti`; more than zero (the API server refuses a claim that requests
    no storage: `ValidatePersistentVolumeClaimSpec`, kubernetes pkg/apis/core/validation)."""

    storage_class: DnsSubdomain | None = None
    """StorageClass of the claim. Default: the cluster's default StorageClass."""
    access_mode: Literal["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"] = "ReadWriteMany"
    """How nodes mount it: every replica of a model reads the weights, so a claim that one node at a
    time can mount (`ReadWriteOnce`, `ReadWriteOncePod`) keeps a second replica on another node
    Pending (warned about)."""

    @model_validator(mode="after")
    def _some_storage(self) -> Self:
        if quantity_value(self.size) <= 0:
            raise invalid(
                f"`size` is {self.size}: a claim must request some storage", "give the weights' size, e.g. `2Ti`"
            )
        return self


class PvcVolume(ConfigModel):
    claim_name: DnsSubdomain
    """PersistentVolumeClaim in the model's namespace."""
    create: ClaimTemplate | None = None
    """Create the claim in the model's namespace (kept when removed from the stack: it holds the
    weights). Unset: the claim must exist (`preflight` and `whatif` report one that does not).
    Models of one namespace that name the same claim share it and must describe it alike."""


class HostPathVolume(ConfigModel):
    path: AbsolutePath
    """Directory on the node (models pre-staged on local disks)."""


class HubSource(ConfigModel):
    id: str
    """Hugging Face model id, e.g. `Qwen/Qwen3-8B`, downloaded at startup."""
    token_secret: str | None = None
    """Entry of `secrets` holding the Hugging Face token (becomes `HF_TOKEN`)."""


class ModelSource(ConfigModel):
    """Where the weights come from: one volume (nfs, pvc, hostPath) or the hub."""

    nfs: NfsVolume | None = None
    """Read-only NFS export holding the weights."""
    pvc: PvcVolume | None = None
    """Read-only PersistentVolumeClaim holding the weights."""
    host_path: HostPathVolume | None = None
    """Directory on every node holding the weights."""
    hub: HubSource | None = None
    """Download from the Hugging Face hub at startup (no volume)."""
    mount_path: AbsolutePath = "/models"
    """Where the volume is mounted in the containers (read-only). Not `/dev/shm` (the platform's
    shared memory), `/`, `/dev`, `/proc` or `/sys`."""
    model: str | None = None
    """Model directory relative to `mountPath` (volume sources)."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        given = [k for k in ("nfs", "pvc", "host_path", "hub") if getattr(self, k) is not None]
        if len(given) != 1:
            raise invalid(
                "exactly one of nfs, pvc, hostPath or hub must be given"
                + (f" (found {', '.join(given)})" if given else ""),
                "describe one source of the model weights",
            )
        if self.hub is None and not self.model:
            raise invalid(
                "`model` is required with a volume source", "set `model` to the model's directory under `mountPath`"
            )
        if self.hub is not None and self.model:
            raise invalid(
                "`model` names a directory of a volume source; a hub source is the model `hub.id`",
                "remove `model`, or choose a volume source (nfs, pvc, hostPath)",
            )
        return self

    @property
    def model_path(self) -> str:
        """What vLLM is told to serve: a path inside the container or a hub id."""
        if self.hub is not None:
            return self.hub.id
        assert self.model is not None
        return f"{self.mount_path.rstrip('/')}/{self.model.strip('/')}"
