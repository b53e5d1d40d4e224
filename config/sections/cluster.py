"""The cluster a stack manages: how to reach it, what its accelerators are called, where its
images and charts come from, and the credentials of private registries (`registries`)."""

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, SecretStr, field_validator

from config.schema.base import ConfigModel, invalid
from config.schema.names import ChartRepository, ExtendedResourceName, LocalFile, RegistryHost
from config.schema.quantity import Quantity

VendorName = Literal["nvidia", "amd", "ascend", "metax", "other"]
"""The keys of `config.upstream.accelerators.VENDORS` (a test keeps them equal)."""


class AcceleratorConfig(ConfigModel):
    """What the cluster's accelerators are, for the Ray bootstrap and the summaries."""

    vendor: VendorName | None = None
    """`nvidia`, `amd`, `ascend`, `metax` or `other`. Default: from the domain of `gpuResource`
    (`nvidia.com`, `amd.com`, `huawei.com`, `metax-tech.com`/`mars-tech.com`), else `other`. A
    vendor other than the one whose domain `gpuResource` has is refused."""
    ray_resource: str | None = None
    """How multi-node replicas advertise a pod's devices to Ray: `GPU` (`ray start --num-gpus`)
    or a custom resource such as `NPU` (`--resources '{"NPU": N}'`, what vLLM-Ascend schedules
    on). Default: the vendor's."""
    word: str | None = None
    """What the devices are called in summaries and the topology picture (`GPU`, `NPU`).
    Default: the vendor's; `accelerator` for `other`."""


class NodeCapacity(ConfigModel):
    """Allocatable resources of one GPU node (what `kubectl describe node` shows)."""

    cpu: Quantity | None = None
    """Allocatable CPU of a GPU node, e.g. `96`. Unset: not checked."""
    memory: Quantity | None = None
    """Allocatable memory of a GPU node, e.g. `1000Gi`. Unset: not checked."""


class MirrorConfig(ConfigModel):
    """Where the platform's own images and charts come from, e.g. in an air-gapped network. Every
    image the stack pulls then comes from the mirror (`images.txt` in a render lists them)."""

    registry: RegistryHost | None = None
    """Registry mirroring the upstream images under their upstream paths (`<registry>/volcanosh/
    vc-scheduler`, `<registry>/lws/lws`). Default for `volcano.imageRegistry` and the LWS image."""
    charts: ChartRepository | None = None
    """Chart source for both charts: `oci://<host>/<path>` (OCI, e.g. Harbor 2.8+, which serves
    charts only over OCI) or an `https://` Helm repository. Default for `volcano.repository`
    and `lws.chart`."""
    pull_secret: str | None = None
    """Entry of `registries` used to pull the platform's images (its `server` must be the
    mirror's registry); the program creates it in `volcano-system` and `lws-system`. Default for
    `volcano.imagePullSecret` and `lws.imagePullSecret`."""
    chart_credentials: str | None = None
    """Entry of `registries` whose username and password pull the charts from `charts` (Helm
    logs in to the OCI registry or the repository with them; the machine running `pulumi up` needs
    no `helm registry login`). Default: the entry whose `server` is the charts' host, so a mirror
    whose `pullSecret` entry is that host pulls charts with the same credentials."""
    chart_ca_file: LocalFile | None = None
    """CA bundle of the charts' registry, a path on the machine that runs `pulumi up`. The
    provider's Release has no plain-HTTP switch: the registry must serve TLS."""


def _host_directory(path: str) -> str:
    if not path.startswith("/") or ".." in path.split("/") or path.rstrip("/") == "":
        raise invalid(
            f"`{path}` is not an allowed host directory: it must be absolute, below `/` and without `..`",
            "list directories such as `/data/models`",
        )
    return path


HostDirectory = Annotated[str, AfterValidator(_host_directory)]


class ClusterConfig(ConfigModel):
    """`cluster`: identity and access of the Kubernetes cluster."""

    name: str | None = None
    """Display name of the cluster in summaries and outputs (free to change). Default: the stack
    name."""

    identifier: str | None = None
    """Identity of the cluster for the Kubernetes provider (`clusterIdentifier`). Every resource
    belongs to the provider, and a new identity replaces the provider and with it every resource,
    so it is set once and never changed; a changed kubeconfig, context or `name` replaces nothing.
    Default: the stack name."""

    kubeconfig: SecretStr | None = None
    """Path to a kubeconfig file, or its contents (set it as a Pulumi secret). Default: the
    ambient `KUBECONFIG` / `~/.kube/config`."""

    context: str | None = None
    """Kubeconfig context to use. Default: the kubeconfig's current context."""

    helm_release_storage: Literal["configmap", "secret"] | None = None
    """Where Helm keeps the records of the charts the stack installs (the provider's
    `helmReleaseSettings.driver`): `configmap` or `secret`. With `secret`, refreshing a Release
    lists every Secret of its namespace, so the preview identity can read the admission webhook's
    TLS key and the pull secret there; with `configmap` it lists ConfigMaps instead (the records
    hold the chart's values and manifest, and neither chart templates a Secret with data). Default:
    `secret`, Helm's own, which keeps an installed cluster's records where they are, warned about
    while a chart is installed; new clusters set `configmap`, installed ones move their records
    first (docs/operations.md, "Helm release records")."""

    force_field_ownership: bool = False
    """Apply every object with `pulumi.com/patchForce`, so fields another field manager took over
    (an ops console's server-side apply, a script's PUT, an `kubectl edit` under another name) are
    taken back by the next `pulumi up --refresh` instead of failing it, and every later preview,
    with a field conflict. It overwrites what was changed on the cluster by hand, on purpose or
    not: turn it on in a reviewed change, once `preflight` has listed the fields other managers
    hold (docs/operations.md, "Drift"). The scheduler policy keys and the node labels are always
    the stack's outright."""

    gpu_resource: ExtendedResourceName = "nvidia.com/gpu"
    """Extended resource name of the cluster's accelerators (`nvidia.com/gpu`, `amd.com/gpu`,
    `huawei.com/Ascend910`, a vendor name such as `mars-tech.com/gpu`). Models, quotas and the
    scheduler's binpacking default to it."""

    gpus_per_node: Annotated[int, Field(ge=1, le=64)] = 8
    """GPUs on a topology node unless a domain or node says otherwise."""

    kubernetes_version: Annotated[str, Field(pattern=r"^1\.\d+$")] = "1.33"
    """Kubernetes minor version (`1.33`) whose API schemas `offline check` validates against."""

    extended_resources: tuple[ExtendedResourceName, ...] = ()
    """Further extended resources the nodes offer (RDMA devices, MIG slices...). Queues and models
    may name only these, the accelerator (`gpuResource`), `cpu`, `memory`, `pods`,
    `ephemeral-storage` and `hugepages-<size>`: a quota on a name no node offers limits nothing."""

    node: NodeCapacity = NodeCapacity()
    """Allocatable CPU and memory of a GPU node, to check that a pod fits one at all."""

    failure_margin: Literal["none", "node", "domain"] | None = None
    """The loss the stack must survive: the tenants' guarantees must still fit (per accelerator
    type) once the largest node (`node`) or the largest tier-1 domain (`domain`, a leaf switch or a
    rack) is gone, and every hard-topology multi-node model must still have a domain for each of
    its replicas. Unset: checked for a node and warned about; `node` or `domain`: refused; `none`:
    not checked."""

    accelerator: AcceleratorConfig = AcceleratorConfig()
    """The accelerator vendor behind `gpuResource` (Ray resource, device variable, naming)."""

    mirror: MirrorConfig = MirrorConfig()
    """Image registry, chart source and pull secret for the platform's own components."""

    host_paths: tuple[HostDirectory, ...] = ("/mnt", "/data", "/models")
    """Node directories models may mount with `hostPath` (and below them), besides the
    accelerator vendor's driver paths. Anything else, and `/`, is refused (at the entry). An entry
    that is, holds or lies in a directory of the node's runtime (`/etc`, `/run`, `/var/run`,
    `/var/lib/kubelet`, `/var/lib/containerd`, `/var/lib/docker`, `/proc`, `/sys`, `/dev`, `/boot`,
    `/root`) is warned about: a pod that mounts it can take over its node."""


class RegistryCredential(ConfigModel):
    """Credentials for a private registry; becomes a `kubernetes.io/dockerconfigjson` Secret."""

    server: RegistryHost
    """Registry host, e.g. `10.8.17.100:60066` (no scheme); a port is 1-65535. The kubelet uses
    the entry for images whose host (and path) it matches, so a model's `imagePullSecrets` and the
    installs' pull secrets must name an entry whose server is their image's registry."""
    username: str
    """User name (or token name) to log in with; not empty."""
    password_secret: str
    """Entry of `secrets` holding the password or token."""

    @field_validator("username")
    @classmethod
    def _username(cls, value: str) -> str:
        if not value.strip():
            raise invalid(
                "the user name is empty, so the registry refuses the login and every pull fails",
                "write the registry user (a Harbor robot account such as `robot$project`)",
            )
        return value
