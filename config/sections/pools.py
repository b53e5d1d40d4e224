"""`pools`: the cluster's node pools, declared once.

A cloud cluster is several node groups, each an instance type with its own accelerator, taints and
size (fixed, or between a minimum and a maximum an autoscaler owns); some sit on a GPU fabric, some
outside any. A pool says how to find its nodes (selector labels), what they offer and, on a fabric,
the shape of its domains by tier. It never lists instance names: membership is whatever the labels
say, so replacing an instance changes nothing. Models name the pools they run on; their node
selector and tolerations follow. The seed's on-premises cluster needs no pools (every GPU node is
one pool, the topology's named nodes)."""

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from config.schema.base import ConfigModel, invalid
from config.schema.names import DnsLabel, ExtendedResourceName, ImageReference, LabelKey, LabelValue
from config.upstream.interconnects import NETWORK_PROFILES

NodeCount = Annotated[int, Field(ge=0, le=100_000)]


class PoolAccelerator(ConfigModel):
    """The accelerator of every node of the pool."""

    count: Annotated[int, Field(ge=0, le=64)]
    """Devices per node (what the device plugin advertises as allocatable)."""
    resource: ExtendedResourceName | None = None
    """Extended resource name of the devices. Default: `cluster.gpuResource`."""
    product: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    """The product, as GPU feature discovery labels it (`nvidia.com/gpu.product`, e.g.
    `NVIDIA-H100-80GB-HBM3`, `NVIDIA-L40S`): shown in summaries and checked by preflight."""
    type: DnsLabel | None = None
    """The accelerator type tenants' quotas per type name (`tenants.<t>.queue.byType.<type>`),
    e.g. `h100`; pools of one type share those quotas. Default: the pool's name."""


class PoolTaint(ConfigModel):
    """A taint every node of the pool carries (set by the node group, not by this program)."""

    key: LabelKey
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class PoolTopology(ConfigModel):
    """Where the pool's nodes sit on the fabric (`topology.tiers`): the shape its labels have,
    or the named domains of `topology.domains` that hold its nodes."""

    domains: tuple[Annotated[int, Field(ge=1, le=100_000)], ...] = ()
    """Domains of the pool at each tier, tier 1 (the closest, e.g. one network node above the
    instances) first, one entry per `topology.tiers` entry, e.g. `[8, 2, 1]`: 8 leaves under 2
    spines under 1 top domain. Each tier's count is a multiple of the one above it (a regular
    tree). `import-topology` reads them from the labels."""
    nodes_per_domain: Annotated[int, Field(ge=1, le=4096)] | None = None
    """Nodes in each tier-1 domain. With `domains`, their product is the pool's node count."""
    named: tuple[str, ...] = ()
    """Instead of a shape: top-tier domains of `topology.domains` (named nodes) that are this
    pool's."""

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        shaped = bool(self.domains) or self.nodes_per_domain is not None
        if shaped and self.named:
            raise invalid(
                "`named` and a shape (`domains`, `nodesPerDomain`) are both given",
                "describe the pool's fabric by its shape, or name its domains in `topology.domains`, not both",
            )
        if shaped and (not self.domains or self.nodes_per_domain is None):
            raise invalid(
                "a shape needs both `domains` (per tier) and `nodesPerDomain`",
                "e.g. `domains: [8, 2, 1]` and `nodesPerDomain: 8`",
            )
        if not shaped and not self.named:
            raise invalid("no shape and no named domains", "give `domains` and `nodesPerDomain`, or `named`")
        return self

    @property
    def shaped(self) -> bool:
        return bool(self.domains)


class PoolNetwork(ConfigModel):
    """The pool's interconnect, which the pods of every model whose replicas span its nodes
    (`nodesPerReplica` > 1) need besides their accelerators (`config.upstream.interconnects`):
    `gpudirect-tcpxo` (GKE A3 Mega) adds the receive-data-path daemon, GKE's multi-network and
    device annotations, the NCCL plugin's node directories and variables, needs every GPU of a node
    per pod and the `privileged` Pod Security level; `efa` (EKS) adds `devices` EFA interfaces per
    pod, with their hugepages and variables, which its tenants' quotas then count."""

    profile: Literal["gpudirect-tcpxo", "efa"]
    """The interconnect: `gpudirect-tcpxo` (GKE A3 Mega's eight GPU NICs) or `efa` (AWS Elastic
    Fabric Adapter)."""
    interfaces: tuple[DnsLabel, ...] = ()
    """`gpudirect-tcpxo`: the GKE `Network` of each GPU NIC, in NIC order (`eth1`...`eth8`), as the
    cluster's `Network` objects name them, e.g. `[vpc1, ..., vpc8]`."""
    devices: Annotated[int, Field(ge=1, le=64)] | None = None
    """`efa`: EFA interfaces per pod (p5.48xlarge: 32)."""
    daemon_image: ImageReference | None = None
    """`gpudirect-tcpxo`: the daemon's image, matched to the NCCL plugin the cluster's installer
    put on the nodes. Default: the release the platform is built against."""

    @model_validator(mode="after")
    def _fits_profile(self) -> Self:
        profile = NETWORK_PROFILES[self.profile]
        if profile.interfaces and len(self.interfaces) != profile.interfaces:
            raise invalid(
                f"`{self.profile}` uses {profile.interfaces} GPU NICs; `interfaces` names {len(self.interfaces)}",
                f"name the {profile.interfaces} GKE `Network`s of the GPU NICs in order (`kubectl get networks`)",
            )
        if len(set(self.interfaces)) != len(self.interfaces):
            raise invalid("`interfaces` names a network twice", "each GPU NIC is on its own network")
        if not profile.interfaces and self.interfaces:
            raise invalid(f"`{self.profile}` attaches no extra networks", "remove `interfaces`")
        if (profile.device is not None) != (self.devices is not None):
            raise invalid(
                "`devices` is given for a profile that requests none"
                if self.devices is not None
                else f"`{self.profile}` needs `devices`, the interfaces each pod requests",
                "remove `devices`" if self.devices is not None else "e.g. `devices: 32` on p5.48xlarge",
            )
        if profile.daemon is None and self.daemon_image is not None:
            raise invalid(f"`{self.profile}` runs no daemon", "remove `daemonImage`")
        return self


class PoolConfig(ConfigModel):
    """One node pool; the key is its name."""

    selector: Annotated[dict[LabelKey, LabelValue], Field(min_length=1)]
    """Labels every node of the pool carries and no other node carries all of, e.g.
    `{eks.amazonaws.com/nodegroup: h100-a}`. Models on the pool select its nodes by them."""
    accelerator: PoolAccelerator | None = None
    """The pool's devices. Unset: a pool without accelerators (CPU nodes)."""
    taints: tuple[PoolTaint, ...] = ()
    """Taints the pool's nodes carry; models on the pool tolerate them."""
    nodes: NodeCount | None = None
    """Nodes of a pool of fixed size."""
    min_nodes: NodeCount | None = None
    """Fewest nodes of a pool an autoscaler (Cluster Autoscaler, Karpenter) scales; with `maxNodes`."""
    max_nodes: NodeCount | None = None
    """Most nodes of an autoscaled pool. Placement checks count this many; the what-if counts the
    nodes there are and says how many more a waiting gang needs."""
    autoscaler: Literal["in-cluster", "managed"] = "in-cluster"
    """Who scales an autoscaled pool: `in-cluster`, a Cluster Autoscaler or Karpenter running in the
    cluster (preflight looks for it), or `managed`, the cloud's own autoscaler, which runs in its
    managed control plane and is never seen in the cluster (GKE's cluster autoscaler and node
    auto-provisioning, AKS's cluster autoscaler, EKS Auto Mode)."""
    network: PoolNetwork | None = None
    """The interconnect multi-node models on the pool need in their pods. Unset: none added."""
    topology: PoolTopology | None = None
    """Where the pool sits on the fabric. Unset: outside any fabric (no topology, nothing to warn
    about; models with a hard network constraint cannot run on it)."""

    @model_validator(mode="after")
    def _taints_once(self) -> Self:
        """The API server refuses a node with two taints of one key and effect (`validateNodeTaints`,
        kubernetes pkg/apis/core/validation/validation.go)."""
        seen = set()
        for index, taint in enumerate(self.taints):
            if (taint.key, taint.effect) in seen:
                raise invalid(
                    f"taints[{index}] repeats the key `{taint.key}` with effect `{taint.effect}`; a node's taints "
                    "are unique by key and effect",
                    "list each taint once",
                )
            seen.add((taint.key, taint.effect))
        return self

    @model_validator(mode="after")
    def _size(self) -> Self:
        scaled = self.min_nodes is not None or self.max_nodes is not None
        if self.nodes is not None and scaled:
            raise invalid(
                "`nodes` and `minNodes`/`maxNodes` are both given",
                "give `nodes` for a pool of fixed size, or `minNodes` and `maxNodes` for an autoscaled one",
            )
        if self.nodes is None and not scaled and self.topology is None:
            raise invalid(
                "the pool's size is not given",
                "give `nodes` (fixed size) or `minNodes` and `maxNodes` (autoscaled)",
            )
        if not scaled and "autoscaler" in self.model_fields_set:
            raise invalid(
                "`autoscaler` is given for a pool that is not autoscaled",
                "give `minNodes` and `maxNodes` as well, or leave `autoscaler` out",
            )
        if scaled and (self.min_nodes is None or self.max_nodes is None):
            raise invalid("an autoscaled pool needs both `minNodes` and `maxNodes`", "give both bounds")
        if scaled and self.min_nodes is not None and self.max_nodes is not None and self.min_nodes > self.max_nodes:
            raise invalid(
                f"`minNodes` ({self.min_nodes}) is above `maxNodes` ({self.max_nodes})",
                "give the smaller bound as `minNodes`",
            )
        return self

    @property
    def autoscaled(self) -> bool:
        return self.max_nodes is not None

    @property
    def largest(self) -> int | None:
        """Nodes at the pool's largest: its fixed size, its maximum, or its shape's count; None for
        named domains (their nodes are listed there)."""
        if self.nodes is not None:
            return self.nodes
        if self.max_nodes is not None:
            return self.max_nodes
        if self.topology is not None and self.topology.nodes_per_domain is not None:
            return self.topology.domains[0] * self.topology.nodes_per_domain
        return None
