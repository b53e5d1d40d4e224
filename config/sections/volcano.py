"""`volcano`: the Volcano install and the scheduler policy it runs."""

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema, field_validator

from config.schema.base import ConfigModel, invalid
from config.schema.names import ChartRepository, LocalFile, RegistryHost, ResourceName
from config.schema.quantity import Quantity
from config.upstream.versions import version_tuple
from config.upstream.volcano import PLUGIN_FLAGS, REGISTERED_ACTIONS, VOLCANO_DEFAULT_VERSION

ChartVersion = Annotated[str, Field(pattern=r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")]
PluginFlags = Annotated[
    dict[str, bool],
    WithJsonSchema(
        {"type": "object", "propertyNames": {"enum": list(PLUGIN_FLAGS)}, "additionalProperties": {"type": "boolean"}}
    ),
]
"""Switch name -> on/off. The names are checked with the scheduler policy (`config.checks.scheduler`),
so an unknown or removed one is reported at its own key with the nearest real name."""
ArgumentValue = int | float | bool | str


class ComponentReplicas(ConfigModel):
    """Replicas of the scheduler, controller and admission webhook."""

    scheduler: Annotated[int, Field(ge=1, le=10)] = 1
    """Scheduler replicas. More than one turns leader election on."""
    controller: Annotated[int, Field(ge=1, le=10)] = 1
    """Controller replicas. More than one turns leader election on."""
    admission: Annotated[int, Field(ge=1, le=10)] = 1
    """Admission webhook replicas."""


class ResourceRequirements(ConfigModel):
    """Requests and limits of one component."""

    requests: dict[ResourceName, Quantity] = {}
    """Requested resources, e.g. `{cpu: 500m, memory: 512Mi}`."""
    limits: dict[ResourceName, Quantity] = {}
    """Resource limits."""


class ComponentResources(ConfigModel):
    """Resources of the Volcano components."""

    scheduler: ResourceRequirements | None = None
    """Resources of the scheduler pod. Default: the chart's (none)."""
    controller: ResourceRequirements | None = None
    """Resources of the controller pod."""
    admission: ResourceRequirements | None = None
    """Resources of the admission webhook pod."""


class Toleration(ConfigModel):
    """A Kubernetes toleration."""

    key: str | None = None
    """Taint key (empty with `Exists` matches every taint)."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """`Equal` compares the value, `Exists` only the key."""
    value: str | None = None
    """Taint value for `Equal`."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    """Taint effect to tolerate; unset tolerates all."""
    toleration_seconds: int | None = None
    """For `NoExecute`: how long the pod stays after the taint appears."""


class BinpackConfig(ConfigModel):
    """GPU binpacking: fill nodes before starting new ones, so whole nodes stay free for big gangs."""

    enabled: bool = True
    """Run the `binpack` plugin."""
    weight: Annotated[int, Field(ge=1, le=100)] = 10
    """`binpack.weight`: how much binpacking counts against the other node-order plugins."""
    gpu: Annotated[int, Field(ge=0, le=100)] = 10
    """Weight of the cluster's GPU resource (`binpack.resources.<gpu>`)."""
    cpu: Annotated[int, Field(ge=0, le=100)] = 1
    """`binpack.cpu`."""
    memory: Annotated[int, Field(ge=0, le=100)] = 1
    """`binpack.memory`."""
    resources: dict[ResourceName, Annotated[int, Field(ge=0, le=100)]] = {}
    """Further extended resources to pack, with their weights (e.g. RDMA devices)."""


class NetworkTopologyPluginConfig(ConfigModel):
    """The `network-topology-aware` plugin; without it hard topology tiers are not enforced."""

    enabled: bool = True
    """Run the plugin (needs Volcano >= 1.12)."""
    weight: Annotated[int, Field(ge=1, le=100)] = 10
    """Plugin `weight`."""
    gpu: Annotated[int, Field(ge=0, le=100)] = 10
    """HyperNode binpacking weight of the GPU resource (Volcano >= 1.14)."""
    cpu: Annotated[int, Field(ge=0, le=100)] = 1
    """`hypernode.binpack.cpu` (Volcano >= 1.14)."""
    memory: Annotated[int, Field(ge=0, le=100)] = 1
    """`hypernode.binpack.memory` (Volcano >= 1.14)."""


class PluginSettings(ConfigModel):
    """Override of one scheduler plugin, or a plugin to add."""

    tier: Annotated[int, Field(ge=1, le=5)] | None = None
    """Tier to place the plugin in. Required for plugins the default policy does not have."""
    enabled: bool = True
    """`false` removes the plugin from the policy."""
    flags: PluginFlags = {}
    """Plugin switches such as `enablePreemptable`, merged over the defaults (the keys of Volcano's
    `PluginOption`; `enableNamespaceOrder`, removed in Volcano 1.8, is refused)."""
    arguments: dict[str, ArgumentValue] = {}
    """Plugin arguments, merged over the defaults. Integers must be unquoted."""


class ActionConfiguration(ConfigModel):
    name: str
    """Action the arguments are for (e.g. `allocate`)."""
    arguments: dict[str, ArgumentValue] = {}
    """Arguments of the action."""


class SchedulerConfig(ConfigModel):
    """The generated `volcano-scheduler.conf`."""

    eviction: Literal["auto", "gang", "pod"] = "auto"
    """How preemption and reclaim pick victims: `gang` (`gangpreempt`, `gangreclaim`, Volcano >=
    1.15: whole sub-groups, i.e. whole LWS groups, inside one HyperNode), `pod` (the legacy
    `preempt`, `reclaim`: pod by pod, only for jobs short of their minimum). `auto`: `gang` when a
    multi-node model exists and Volcano is >= 1.15, else `pod`. `pod` (or legacy `actions`) with a
    multi-node model is warned about: one evicted pod restarts its whole LWS group. `gang` with the
    `gang` plugin off is refused."""
    actions: tuple[str, ...] | None = None
    """Actions, run in order each cycle. Default: `enqueue, allocate, <preempt>, <reclaim>,
    backfill`, with the preempt and reclaim actions of `eviction`. A list without `enqueue` is
    refused: allocate then moves every PodGroup to Inqueue unchecked against its queue."""
    queue_plugin: Literal["capacity", "proportion"] = "capacity"
    """Queue-sharing plugin: `capacity` (deserved/capability/guarantee, hierarchy) or
    `proportion` (weights; ignores deserved and parent). Never both."""
    hierarchy: bool | None = None
    """`enableHierarchy` on the capacity plugin. Default: on when any tenant queue has a parent."""
    binpack: BinpackConfig = BinpackConfig()
    """GPU binpacking plugin."""
    network_topology: NetworkTopologyPluginConfig = NetworkTopologyPluginConfig()
    """Network-topology-aware plugin."""
    spread_weight: Annotated[int, Field(ge=0, le=1000)] = 2
    """`podtopologyspread.weight` of the `nodeorder` plugin: how much a model's preferred `spread`
    counts against binpacking. At Volcano's default of 2 a replica of one GPU of eight goes to an
    empty node rather than beside another (binpacking tells them apart by about 100, spreading by
    200), while larger replicas still pack, keeping whole nodes for gangs; 10 spreads every
    replica where there is room, at the cost of whole nodes. It also weighs Kubernetes' default
    spreading of other ReplicaSets' pods Volcano places. `0` turns preferred spreading off."""
    plugins: dict[str, PluginSettings] = {}
    """Per-plugin overrides and additions, keyed by plugin name."""
    configurations: tuple[ActionConfiguration, ...] = ()
    """Action arguments (`configurations` in the scheduler conf)."""

    @field_validator("actions")
    @classmethod
    def _known_actions(cls, actions: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if actions is None:
            return None
        unknown = [a for a in actions if a not in REGISTERED_ACTIONS]
        if unknown:
            raise invalid(
                f"unknown action `{unknown[0]}`: the scheduler would reject the whole conf and "
                "silently keep the previous one",
                "use actions from: " + ", ".join(sorted(REGISTERED_ACTIONS)),
            )
        if len(set(actions)) != len(actions):
            raise invalid("an action is listed twice", "list each action once")
        if not actions:
            raise invalid("no actions", "list at least `enqueue, allocate, backfill`")
        return actions


class ChartAccess(ConfigModel):
    """How a Helm chart of the stack is pulled from a private registry (Volcano's and LWS's)."""

    chart_credentials: str | None = None
    """Entry of `registries` whose username and password pull the chart (a private Harbor
    project, a Helm repository behind basic auth). Default: `cluster.mirror.chartCredentials` for
    a chart from the mirror, else the entry whose `server` is the chart's host, else none. The
    password stays a secret in the Release's inputs."""
    chart_ca_file: LocalFile | None = None
    """CA bundle for the chart's registry, a path on the machine that runs `pulumi up`
    (`repositoryOpts.caFile`). Default: `cluster.mirror.chartCaFile` for a chart from the mirror."""


class VolcanoConfig(ChartAccess):
    """`volcano`: chart, images, replicas and the scheduler policy."""

    install: bool = True
    """Install Volcano's chart. `false` when Volcano is installed and upgraded elsewhere (a managed
    add-on, another team's release): the program then owns only the scheduler policy, the
    `volcano-scheduler.conf` key of ConfigMap `volcano-scheduler-configmap` in `volcano-system`
    (and, with HyperNode discovery, the `volcano-controller.conf` key of
    `volcano-controller-configmap`), applied server-side so the rest of those ConfigMaps stays
    theirs, and the settings of the chart are refused. `version` is then the release that runs."""
    version: ChartVersion = VOLCANO_DEFAULT_VERSION
    """Volcano Helm chart version (quote it). Its schemas must be vendored in `upstream/`."""
    repository: ChartRepository | None = None
    """Where the chart comes from: an `https://` Helm repository or an `oci://<host>/<path>`
    registry (the chart is then `<repository>/volcano`). Default: `cluster.mirror.charts`, else
    the public repository."""
    protect: bool = False
    """Protect the release (and its namespace) from deletion. Uninstalling Volcano deletes its
    CRDs and with them every Queue, PodGroup and HyperNode."""
    adopt: bool = False
    """Volcano was installed by hand (`helm install volcano ... -n volcano-system`): take over
    that release and its namespace instead of installing anew, which would collide with it and,
    if it were uninstalled, delete every Queue and PodGroup. `pulumi up` imports the release and
    upgrades it in place to this stack's chart version and values (`helm/volcano.yaml`)."""
    image_registry: RegistryHost | None = None
    """Registry the Volcano images are pulled from (host[:port][/path], no scheme; a port is
    1-65535, and a rendered image name is at most 255 characters). Default:
    `cluster.mirror.registry`, else the chart's (`docker.io`)."""
    image_tag: str | None = None
    """Image tag of all Volcano components: the tag alone (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`,
    else refused: the admission webhook fails closed). Default: the chart's, except where a patch
    release fixes a scheduling bug of the chart's images (chart 1.15.0 runs `v1.15.1`)."""
    image_pull_secret: str | None = None
    """Entry of `registries` to pull the Volcano images with; the program creates the Secret in
    `volcano-system`. Its `server` must be the images' registry. Default: `cluster.mirror.pullSecret`."""
    replicas: ComponentReplicas = ComponentReplicas()
    """Replicas of the Volcano components."""
    resources: ComponentResources = ComponentResources()
    """Resources of the Volcano components."""
    node_selector: dict[str, str] = {}
    """Node selector for all Volcano components."""
    tolerations: tuple[Toleration, ...] = ()
    """Tolerations for all Volcano components."""
    admission: bool = True
    """Run the admission webhook (validates Queues, PodGroups and HyperNodes)."""
    scheduler: SchedulerConfig = SchedulerConfig()
    """The generated scheduler policy."""
    values: dict[str, Any] = {}
    """Extra chart values, merged over the generated ones (escape hatch)."""

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return version_tuple(self.version)
