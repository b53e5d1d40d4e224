"""`topology`: the GPU nodes' leaf/spine network as tiers of node labels and a tree of domains."""

import json
from typing import TYPE_CHECKING, Annotated, Literal, Self

from pydantic import AfterValidator, Field, TypeAdapter, field_validator, model_validator

from config.schema.base import ConfigModel, by_shape, invalid
from config.schema.names import LabelKey, label_value_problem
from config.sections.fabric import MAX_TOPOLOGY_NODES, FabricConfig, expand_fabric, fabric_nodes, merge_domains
from config.upstream.cloud_topology import PRESETS
from config.upstream.volcano import DISCOVERY_TYPE_NAME_MAX, HOSTNAME_LABEL


def _domain_name(value: str) -> str:
    """A domain's name is the value of its tier label on its nodes: what Kubernetes takes as a
    label value (a provisioner's `Block_A1` included). Where the stack also creates a HyperNode
    of that name (`hyperNodes: explicit`), `check_names` asks a DNS subdomain as well."""
    problem = label_value_problem(value) or ("is empty" if not value else None)
    if problem:
        raise invalid(
            f"domain name `{value}` {problem}",
            "domain names are node-label values: use letters, digits, '-', '_' and '.', at most 63 characters",
        )
    return value


DomainName = Annotated[str, AfterValidator(_domain_name)]
GpuCount = Annotated[int, Field(ge=0, le=64)]


class NodeGroup(ConfigModel):
    """Nodes that differ from their domain's default GPU count."""

    names: str
    """Node name or range, e.g. `gpu-worker-[1-4]` (padding as for `nodes`)."""
    gpus: GpuCount
    """GPUs on each of these nodes."""


if TYPE_CHECKING:
    NodeEntry = str | NodeGroup
else:  # chosen by shape at run time, so errors come from the branch the user meant
    NodeEntry = by_shape(str, NodeGroup)


class DomainConfig(ConfigModel):
    """One network domain: a leaf (with nodes) or a higher tier (with child domains)."""

    gpus_per_node: GpuCount | None = None
    """GPUs per node in this domain and below. Default: the parent's, then
    `topology.gpusPerNode`, then `cluster.gpusPerNode`."""
    nodes: tuple[NodeEntry, ...] = ()
    """Leaf domains only: node names or ranges, or `{names, gpus}`. A range with a leading zero
    is zero-padded to its width (`gpu-[001-128]` is gpu-001 ... gpu-128), one without is not
    (`gpu-[1-128]` is gpu-1 ... gpu-128); bounds of different widths with a leading zero are
    refused. Several brackets multiply (`rack[1-2]-node[01-16]`), commas list (`gpu-[1-4,7]`)."""
    domains: dict[DomainName, "DomainConfig"] = {}
    """Higher tiers only: the child domains, one tier lower."""


class DiscoveryConfig(ConfigModel):
    """Label discovery by the Volcano controller (`hyperNodes: discovery`)."""

    type_name: str = "gpu-fabric"
    """Name of the topology type in the controller config (at most 20 characters); it appears in
    the generated HyperNode names `hypernode-<type>-tier<N>-<random>`."""
    interval: Annotated[str, Field(pattern=r"^\d+(s|m|h)$")] = "10m"
    """How often the controller re-reads the node labels."""

    @field_validator("type_name")
    @classmethod
    def _type_name(cls, value: str) -> str:
        if not value or len(value) > DISCOVERY_TYPE_NAME_MAX or not value.replace("-", "").isalnum():
            raise invalid(
                f"type name `{value}` must be 1-{DISCOVERY_TYPE_NAME_MAX} letters, digits or '-'",
                "use a short name such as `topologyA2`",
            )
        return value


class NodeLabelsConfig(ConfigModel):
    """Node labels the program sets from the domain tree."""

    enabled: bool = True
    """Label every topology node with its domains (one server-side-apply patch per node). Turn
    off when provisioning already labels the nodes."""
    retain_on_delete: bool = True
    """Keep a node's labels when it is removed from the config (a live node keeps its
    placement). `false` strips them on removal."""
    force: bool = True
    """Take over labels another field manager set (e.g. an earlier `kubectl label`)."""


class TopologyConfig(ConfigModel):
    """`topology`: tiers (tier 1 = the closest domain) and the domain tree."""

    preset: Literal["aws", "aws-4-layer", "gcp", "oci", "topograph", "nvlink"] | None = None
    """The standard labels of a cloud or tool as the tiers, and labels owned by their provisioner
    (`nodeLabels.enabled: false`): `aws` (`topology.k8s.aws/network-node-layer-3`, `-2`, `-1`),
    `aws-4-layer` (P6-B200/B300: `-4` to `-1`), `gcp` (`cloud.google.com/gce-topology-host`,
    `-subblock`, `-block`: tier 1 is one host, so the smallest domain of several nodes is tier 2, the
    sub-block, and a multi-node model's `topology.highestTier` is 2 or more), `oci`
    (`oci.oraclecloud.com/rdma.local_block_id`, `.network_block_id`, `.hpc_island_id`),
    `topograph` (`fabric.topograph.run/tier-0`, `-1`, `-2`), `nvlink`
    (`nvidia.com/gpu.clique`). Each preset's source is in `config/upstream/cloud_topology.py`."""
    tiers: Annotated[tuple[LabelKey, ...], Field(max_length=6)] = ()
    """Node-label key of each tier, tier 1 (leaf, fastest) first, e.g.
    `[topology.example.com/leaf, topology.example.com/spine]`. Default: the preset's."""
    hyper_nodes: Literal["discovery", "explicit", "none"] = "discovery"
    """How HyperNodes come about: `discovery` (the Volcano controller builds them from the node
    labels), `explicit` (this program creates them), or `none`."""
    discovery: DiscoveryConfig = DiscoveryConfig()
    """Label discovery settings (`hyperNodes: discovery`)."""
    node_labels: NodeLabelsConfig = NodeLabelsConfig()
    """Node labels set from the domain tree."""
    gpus_per_node: GpuCount | None = None
    """GPUs per node unless a domain or node says otherwise. Default: `cluster.gpusPerNode`."""
    fabric: FabricConfig | None = None
    """A regular tree in a few lines (nodes per leaf, leaves per spine, ... with name patterns),
    expanded to the `domains` it stands for; `domains` beside it adds or overrides parts by name."""
    domains: dict[DomainName, DomainConfig] = {}
    """The top-tier domains, each with its children down to the leaves and their nodes. With
    `fabric`: the irregular parts (a short leaf, nodes with fewer GPUs, an extra leaf), merged into
    the generated tree by name."""

    @field_validator("tiers")
    @classmethod
    def _distinct_tiers(cls, tiers: tuple[str, ...]) -> tuple[str, ...]:
        if not tiers:
            raise invalid("no tiers", "list the tier label keys, tier 1 first, or choose a `preset`")
        if len(set(tiers)) != len(tiers):
            raise invalid("a tier label is listed twice", "give each tier its own label key")
        if HOSTNAME_LABEL in tiers:
            raise invalid(
                f"`{HOSTNAME_LABEL}` is the node level, not a tier",
                "list only the switch tiers; the hostname level is implied",
            )
        return tiers

    @model_validator(mode="after")
    def _from_preset(self) -> Self:
        """A preset's tiers, and its labels left to their provisioner, unless the stack says otherwise."""
        update: dict[str, object] = {}
        if self.preset is not None and not self.tiers:
            update["tiers"] = PRESETS[self.preset].tiers
        if self.preset is not None and "node_labels" not in self.model_fields_set:
            update["node_labels"] = NodeLabelsConfig(enabled=False)
        filled = self.model_copy(update=update) if update else self
        if not filled.tiers:
            raise invalid("`tiers` is not given", "list the tier label keys, tier 1 first, or choose a `preset`")
        return filled

    @model_validator(mode="after")
    def _expand_fabric(self) -> Self:
        if self.fabric is None:
            return self
        if len(self.fabric.tiers) != len(self.tiers):
            raise invalid(
                f"`fabric.tiers` has {len(self.fabric.tiers)} entries for {len(self.tiers)} topology tiers",
                "give one fabric tier per entry of `tiers`, tier 1 (leaf) first",
            )
        nodes = fabric_nodes(self.fabric)
        if nodes > MAX_TOPOLOGY_NODES:
            sizes = " x ".join(str(n) for n in (self.fabric.count, *(t.size for t in reversed(self.fabric.tiers))))
            raise invalid(
                f"`fabric` expands to {nodes} nodes ({sizes}), more than the {MAX_TOPOLOGY_NODES} a topology may hold",
                "check `fabric.count` and each tier's `size`: one wrong size multiplies the whole tree",
            )
        explicit = {
            name: d.model_dump(by_alias=True, exclude_unset=True, warnings=False) for name, d in self.domains.items()
        }
        merged = merge_domains(expand_fabric(self.fabric), explicit)
        # JSON mode, as the stack config is validated (strict types take lists for tuples there).
        return self.model_copy(update={"domains": _DOMAINS.validate_json(json.dumps(merged))})


_DOMAINS: TypeAdapter[dict[str, DomainConfig]] = TypeAdapter(dict[DomainName, DomainConfig])
