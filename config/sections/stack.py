"""The whole stack config: every top-level key of `Pulumi.<stack>.yaml` under `volcano-platform:`,
and `include`, the files of the repository that hold some of its sections."""

from typing import Annotated, Any

from pydantic import Field, SecretStr

from config.schema.base import ConfigModel
from config.schema.names import DnsLabel, ModelName, PriorityClassName, SecretName, TenantName
from config.sections.cluster import ClusterConfig, RegistryCredential
from config.sections.gateway import GatewayConfig
from config.sections.isolation.network_policies import NetworkPoliciesConfig
from config.sections.isolation.tenant_policy import TenantPolicyConfig
from config.sections.lws import LwsConfig
from config.sections.models import ModelConfig
from config.sections.observability import ObservabilityConfig
from config.sections.pools import PoolConfig
from config.sections.priority import PriorityClassConfig
from config.sections.tenants import DefaultQueuePatch, TenantConfig
from config.sections.topology import TopologyConfig
from config.sections.volcano import VolcanoConfig
from config.stack_file.includes import MAX_PATTERN_LENGTH

IncludePattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_LENGTH)]


class IncludeConfig(ConfigModel):
    """Files whose sections join the stack's config. Paths are relative to the folder of the stack
    file (the project directory for committed stacks) and stay inside it: no absolute paths, no
    `..`, no links out; `*` and `?` match within one path component. The CLI hands the stack
    file's config to the program in one environment variable, limited to 128 KiB; files are read
    by the program itself, so a stack of any size stays under the limit."""

    files: tuple[IncludePattern, ...] = ()
    """Files holding any sections of the stack (`topology: ...`, `models: ...`). Entries of
    `tenants`, `models`, `priorityClasses` and `registries` join those of the stack file and the
    other files (a name defined twice is an error naming both places); any other section is written
    in one place only."""
    tenants: tuple[IncludePattern, ...] = ()
    """Tenant files: each holds one tenant under `tenants` and that tenant's models under `models`
    (a model's `tenant` defaults to it and may not name another), nothing else. With one file per
    tenant, a `CODEOWNERS` line per file lets each tenant team review its own changes."""


class StackConfig(ConfigModel):
    """Configuration of one cluster. Keys are read from `volcano-platform:<key>`."""

    cluster: ClusterConfig = ClusterConfig()
    """Cluster identity, access and GPU resource name."""
    volcano: VolcanoConfig = VolcanoConfig()
    """The Volcano install and its scheduler policy."""
    lws: LwsConfig = LwsConfig()
    """The LeaderWorkerSet controller."""
    pools: dict[DnsLabel, PoolConfig] = {}
    """Node pools keyed by name: how to find each pool's nodes, their accelerator, taints, size and
    place on the fabric. Omit on a cluster whose GPU nodes are one pool (the topology's named
    nodes); models then run on any of them."""
    topology: TopologyConfig | None = None
    """Network topology of the GPU nodes. Omit on clusters without one (no node labels, no
    HyperNodes, no placement checks)."""
    priority_classes: dict[PriorityClassName, PriorityClassConfig] | None = None
    """PriorityClasses keyed by name. Default: p0-critical, p1-high, p2-normal, p3-low."""
    tenants: dict[TenantName, TenantConfig] = {}
    """Tenants keyed by name."""
    tenant_policy: TenantPolicyConfig = TenantPolicyConfig()
    """What tenant files (`include.tenants`) may use and set: priority classes, quota ceilings,
    queue priority, non-reclaimable queues, unpreemptable models, Pod Security level, secrets,
    registries, network attachments and namespaces. A tenant file going past it is refused at its
    key; only the stack file and `include.files` files may hold this section."""
    default_queue: DefaultQueuePatch | None = None
    """Patch of the scheduler-owned `default` queue."""
    model_defaults: dict[str, Any] = {}
    """Settings merged under every model (image, env, source...), so a stack states shared
    values once. Any key of a model; a model's own settings win. Mappings (env, labels, resources,
    engine, volumes...) merge key by key; `tolerations`, `imagePullSecrets` and `networks` are
    joined (a model's entry replaces a default entry for the same toleration, registry or network
    name); every other list (`extraArgs`, `capabilities`) is replaced whole. A problem with a value
    written here is reported once, at `modelDefaults.<key>`, naming the models that inherit it."""
    models: dict[ModelName, ModelConfig] = {}
    """Served models keyed by workload name."""
    observability: ObservabilityConfig = ObservabilityConfig()
    """Metrics, alerts and a dashboard (needs prometheus-operator, or GKE's Managed Service for
    Prometheus, on the cluster)."""
    network_policies: NetworkPoliciesConfig = NetworkPoliciesConfig()
    """NetworkPolicies in every tenant namespace: traffic from the tenant's own namespaces, the
    gateway and monitoring only; decode pods of a model with prefill and decode apart reach only
    their slice's prefill pods. On by default."""
    gateway: GatewayConfig | None = None
    """The shared inference gateway: models with `gateway.enabled` get an InferencePool, an
    endpoint picker and a route per consuming tenant, with the tenants' requests ordered by their
    PriorityClasses. Needs Gateway API and the Inference Extension's CRDs on the cluster."""
    registries: dict[SecretName, RegistryCredential] = {}
    """Private registry credentials keyed by the Secret name models refer to."""
    secrets: dict[SecretName, SecretStr] = {}
    """Secret values (set with `pulumi config set --secret --path 'secrets.<name>'`)."""
    include: IncludeConfig | None = None
    """Files holding sections of this stack (a topology, one file per tenant), read by the program
    from the stack file's folder: the stack file stays small (the CLI hands its config over in
    one environment variable, at most 128 KiB) and each file can have its own reviewers."""


TOP_LEVEL_KEYS: tuple[str, ...] = tuple(info.alias or name for name, info in StackConfig.model_fields.items())
