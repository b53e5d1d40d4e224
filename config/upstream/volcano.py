"""Names, limits and switches of Volcano v1.15 (chart, scheduler, controller, CRDs)."""

from __future__ import annotations

from typing import Final

VOLCANO_CHART: Final = "volcano"
VOLCANO_REPOSITORY: Final = "https://volcano-sh.github.io/helm-charts"
VOLCANO_DEFAULT_VERSION: Final = "1.15.0"
VOLCANO_NAMESPACE: Final = "volcano-system"
# Images of the components the chart deploys with this program's values (`basic.*_image_name`;
# the agent, agent scheduler and metrics stack stay off), pulled as
# `<basic.image_registry>/<name>:<basic.image_tag_version>`; the chart's tag is `v<chart version>`.
VOLCANO_CHART_REGISTRY: Final = "docker.io"
VOLCANO_SCHEDULER_IMAGE: Final = "volcanosh/vc-scheduler"
VOLCANO_CONTROLLER_IMAGE: Final = "volcanosh/vc-controller-manager"
VOLCANO_ADMISSION_IMAGE: Final = "volcanosh/vc-webhook-manager"  # also the admission-init hook Job
# Chart versions whose images have a scheduling bug fixed in a patch release that only changes
# the image tag: the program runs the patched images.
VOLCANO_PATCHED_IMAGE_TAGS: Final = {"1.15.0": "v1.15.1"}
# Image tags with a known scheduling bug, and what it does.
VOLCANO_IMAGE_BUGS: Final = {
    "v1.15.0": (
        "its enqueue/capacity path counts queued jobs' extended resources (GPUs) in whole units instead of "
        "milli-units (pkg/scheduler/plugins/util/util.go), so a queued 16-GPU gang reserves 0.016 GPU and queues "
        "admit more gangs than their capability; fixed in v1.15.1 (commit e945225f3)"
    ),
}
# Object names are prefixed with the release name, webhook names are not: one release per cluster.
VOLCANO_RELEASE: Final = "volcano"
VOLCANO_DEFAULT_SCHEDULER_CONF: Final = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
"""What the scheduler runs without a configuration it can read: `DefaultSchedulerConf` of
pkg/scheduler/util.go (the same in v1.14.1, v1.15.0 and v1.15.1), kept when the file it is given
cannot be parsed (`loadSchedulerConf`, pkg/scheduler/scheduler.go)."""
SCHEDULER_CONFIG_MAP: Final = (f"{VOLCANO_RELEASE}-scheduler-configmap", "volcano-scheduler.conf")
"""The ConfigMap and key the chart mounts as the scheduler's `--scheduler-conf`
(installer/helm/chart/volcano/templates/scheduler.yaml); the scheduler reloads it on change."""
CONTROLLER_CONFIG_MAP: Final = (f"{VOLCANO_RELEASE}-controller-configmap", "volcano-controller.conf")
"""The ConfigMap and key the controller reads its HyperNode discovery from
(pkg/controllers/hypernode/configmap_handler.go, config/loader.go), watched through the API."""
VOLCANO_SCHEDULER_NAME: Final = "volcano"

QUEUE_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
PODGROUP_PLURAL: Final = "podgroups.scheduling.volcano.sh"
"""The PodGroup kind as kubectl names it without ambiguity (Kubernetes' scheduler-plugins has one too)."""
HYPERNODE_API_VERSION: Final = "topology.volcano.sh/v1alpha1"

# Queues the scheduler creates itself; creating them again fails, so they are only ever patched.
RESERVED_QUEUES: Final = frozenset({"root", "default"})
MAX_QUEUE_DEPTH: Final = 5  # below `root`
QUEUE_WEIGHT_MAX: Final = 65535

REGISTERED_ACTIONS: Final = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle"}
)
REGISTERED_PLUGINS: Final = frozenset(
    {
        "drf",
        "gang",
        "deviceshare",
        "predicates",
        "priority",
        "nodeorder",
        "conformance",
        "binpack",
        "resource-strategy-fit",
        "tdm",
        "overcommit",
        "sla",
        "task-topology",
        "numa-aware",
        "cdp",
        "rescheduling",
        "usage",
        "pdb",
        "nodegroup",
        "network-topology-aware",
        "proportion",
        "capacity",
        "extender",
        "resourcequota",
    }
)
QUEUE_PLUGINS: Final = ("capacity", "proportion")
TOPOLOGY_PLUGIN: Final = "network-topology-aware"
# The `nodegroup` plugin (pkg/scheduler/plugins/nodegroup/nodegroup.go, v1.15.1): a node's group is
# its `volcano.sh/nodegroup-name` label; a queue's `spec.affinity.nodeGroupAffinity` lists the
# groups its tasks may use. A labelled node takes only tasks of queues with an affinity that names
# its group; with `strict: false` an unlabelled node takes tasks of queues without any affinity.
NODEGROUP_PLUGIN: Final = "nodegroup"
NODE_GROUP_LABEL: Final = "volcano.sh/nodegroup-name"

# Boolean switches a plugin entry of volcano-scheduler.conf accepts besides `name` and `arguments`:
# the YAML keys of `PluginOption` (pkg/scheduler/conf/scheduler_conf.go, v1.15.1), `enable...` and
# `enabled...` spelt as upstream spells them. The scheduler reads the conf with a lenient YAML
# decoder, so any other key is silently ignored.
PLUGIN_FLAGS: Final = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "EnabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)

# Switches that existed once and are silently ignored now, with what happened to them.
REMOVED_PLUGIN_FLAGS: Final = {
    "enableNamespaceOrder": (
        "was removed from Volcano in v1.8 (commit 4ee689ac2, `PluginOption` in pkg/scheduler/conf/scheduler_conf.go), "
        "so the scheduler ignores it: namespaces are no longer ordered by a plugin flag"
    ),
}

# Plugins whose functions choose eviction victims (`AddPreemptableFn`, `AddReclaimableFn`,
# `AddUnifiedEvictableFn` in pkg/scheduler/plugins/*, v1.15.1), and the switch that turns each one's
# part off (the gang-aware path, `UnifiedEvictable`, honours no switch).
VICTIM_PLUGINS: Final = {
    "priority": ("enablePreemptable",),
    "gang": ("enablePreemptable", "enableReclaimable"),
    "conformance": ("enablePreemptable", "enableReclaimable"),
    "drf": ("enablePreemptable",),
    "capacity": ("enableReclaimable",),
    "proportion": ("enableReclaimable",),
    "pdb": ("enablePreemptable", "enableReclaimable"),
    "cdp": ("enablePreemptable", "enableReclaimable"),
    "tdm": ("enablePreemptable",),
    "extender": ("enablePreemptable", "enableReclaimable"),
}
# Queue plugins that filter gang-aware reclaim (`gangreclaim`) by deserved share and guarantee: only
# capacity registers an `UnifiedEvictableFn`; proportion has none, so with it gang-aware reclaim
# takes from queues below their deserved share.
GANG_EVICTION_QUEUE_PLUGINS: Final = ("capacity",)
EVICTION_ACTIONS: Final = ("preempt", "reclaim", "gangpreempt", "gangreclaim")

# Argument types the scheduler parses strictly: a quoted number is ignored, a wrong type can crash.
INTEGER_PLUGIN_ARGUMENTS: Final = {
    "binpack": ("binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources."),
    "network-topology-aware": (
        "weight",
        "hypernode.binpack.cpu",
        "hypernode.binpack.memory",
        "hypernode.binpack.resources.",
    ),
    "nodeorder": (
        "nodeaffinity.weight",
        "podaffinity.weight",
        "leastrequested.weight",
        "balancedresource.weight",
        "mostrequested.weight",
        "tainttoleration.weight",
        "imagelocality.weight",
    ),
}
BOOLEAN_PLUGIN_ARGUMENTS: Final = {
    "network-topology-aware": ("hypernode.binpack.normal-pod.enable",),
}

# Feature floors (chart versions).
FLOOR_NETWORK_TOPOLOGY: Final = (1, 12)  # HyperNode CRD, PodGroup networkTopology, the plugin
FLOOR_TIER_NAMES: Final = (1, 14)  # HyperNode tierName, highestTierName, subGroupPolicy, hypernode.binpack.*
FLOOR_DEQUEUE_STRATEGY: Final = (1, 14)  # Queue spec.dequeueStrategy (absent from the 1.13 Queue CRD)
FLOOR_GANG_EVICTION: Final = (1, 15)  # gangpreempt, gangreclaim
# Gang-aware eviction (design doc gang-aware-eviction-design.md): whole sub-groups, inside one
# HyperNode. Never combined with the legacy `preempt`/`reclaim` in one action list.
GANG_EVICTION_ACTIONS: Final = ("gangpreempt", "gangreclaim")
LEGACY_EVICTION_ACTIONS: Final = ("preempt", "reclaim")

# Label discovery (controller config).
DISCOVERY_TYPE_NAME_MAX: Final = 20
DISCOVERY_SOURCE_LABEL: Final = "volcano.sh/network-topology-source"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"

# Pod annotations and labels Volcano reads.
QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
PREEMPTABLE_ANNOTATION: Final = "volcano.sh/preemptable"

# Metrics (chart `custom.{scheduler,controller}_metrics_enable`, on by default): one Service each,
# named `<release>-scheduler-service` / `<release>-controllers-service`, port named `metrics`.
VOLCANO_METRICS_SERVICES: Final = {
    "scheduler": ("scheduler_metrics_enable", f"{VOLCANO_RELEASE}-scheduler-service", {"app": "volcano-scheduler"}),
    "controller": (
        "controller_metrics_enable",
        f"{VOLCANO_RELEASE}-controllers-service",
        {"app": "volcano-controller"},
    ),
}
VOLCANO_METRICS_PORT_NAME: Final = "metrics"
VOLCANO_METRICS_PORTS: Final = {"scheduler": 8080, "controller": 8081}
"""The ports behind those Services (chart templates `scheduler.yaml`, `controllers.yaml`): the
containers declare none, so a pod monitor scrapes them by number."""
