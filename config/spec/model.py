"""`ModelSpec`: one served model with its namespace, queue, resources and vLLM version resolved."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property

from config.schema.quantity import format_amount, quantity_value
from config.sections.autoscaling import AutoscalingConfig
from config.sections.disaggregation import DisaggregationConfig, ServingRoleName
from config.sections.models import ModelConfig, ServingRole
from config.sections.pools import PoolNetwork
from config.spec.gang import Gang, RoleGang, SliceGang
from config.upstream.interconnects import INTERCONNECTS, NETWORK_PROFILES, profile_annotations


def pod_devices(config: ModelConfig, network: PoolNetwork | None) -> dict[str, int]:
    """Devices a pod requests besides its accelerators: the model's own (`resources.devices`) and
    its pool's network profile's, which the model's own count overrides."""
    devices = dict(config.resources.devices)
    device = NETWORK_PROFILES[network.profile].device if network is not None else None
    if device is not None and network is not None and network.devices:
        devices.setdefault(device.resource, network.devices)
    return devices


@dataclass(frozen=True)
class ModelSpec:
    name: str
    config: ModelConfig
    tenant: str
    namespace: str
    queue: str
    gpu_resource: str
    vendor: str
    """The accelerator vendor of its devices (`config.upstream.accelerators.VENDORS`)."""
    ray_resource: str
    """How its pods advertise their devices to Ray (`GPU`, or a custom resource such as `NPU`)."""
    service_name: str
    vllm_version: tuple[int, ...]
    vllm_version_known: bool
    """False when neither `vllmVersion` nor the image tag names the version (the current
    release is assumed)."""
    highest_tier: int | None
    """Resolved highest tier (from number or label), None when unconstrained."""
    own_pod_group: bool
    """Multi-node model with a platform-made PodGroup (LWS gang scheduling off)."""
    pod_requests: dict[str, str]
    """Requests (= limits) of one pod, resource -> quantity text."""
    queue_owner: str = ""
    """The tenant entry whose queue it runs in: its tenant, or the tenant's queue of its pools'
    accelerator type (`queue.byType`)."""
    pools: tuple[str, ...] | None = None
    """Node pools its pods may run on (stacks with `pools`); None: any node."""
    node_selector: dict[str, str] = field(default_factory=dict)
    """The pods' node selector: the model's own, narrowed to its pool."""
    node_affinity_terms: tuple[dict[str, str], ...] = ()
    """Required node-affinity terms (any one matches), one per pool when its pools share no selector."""
    tolerations: tuple[dict[str, object], ...] = ()
    """The pods' tolerations: the model's own and its pools' taints."""
    role_views: tuple[ModelSpec, ...] = ()
    """A model with `roles`: one view per role (prefill, decode), each with the role's config
    (`role_config`), requests and tier, and `serving_role` set."""
    serving_role: ServingRoleName | None = None
    """On a role's view: the role."""
    slice_index: int | None = None
    """On a role's view of one slice (`for_slice`): the slice."""
    model_port: int = 0
    """The port the model serves its API on (`port`; on decode's view the sidecar's, while its
    config's `port` is the vLLM behind it). 0: the config's."""
    sidecar_image: str | None = None
    """On decode's view: the routing sidecar's image."""
    sidecar_pull_secret: str | None = None
    """On decode's view: the entry of `registries` the sidecar's image is pulled with, if any."""
    network: PoolNetwork | None = None
    """The network profile of its pools its pods carry (`pools.<p>.network`): set on a model (or
    role) whose replicas span nodes, when every pool it may run on has the same one."""
    network_daemon_image: str | None = None
    """The image of that profile's daemon, if it runs one."""
    spread: tuple[str, bool] | None = None
    """(label key, required) its replicas spread across (`models.<m>.spread`), resolved with the
    default; None when they do not spread."""

    @property
    def multi_node(self) -> bool:
        return self.config.multi_node

    @property
    def devices(self) -> dict[str, int]:
        """Devices each pod requests besides its accelerators."""
        return pod_devices(self.config, self.network)

    @property
    def interconnect_env(self) -> dict[str, tuple[str, str]]:
        """Variables the platform sets for the interconnects its pods use, name -> (value, what needs
        it: a device resource or the pools' network profile); a device's win over the profile's,
        and the model's own `env` over both."""
        out: dict[str, tuple[str, str]] = {}
        for device in self.devices:
            interconnect = INTERCONNECTS.get(device)
            for name, value in interconnect.env.items() if interconnect else ():
                out.setdefault(name, (value, device))
        if self.network is not None:
            for name, value in NETWORK_PROFILES[self.network.profile].env.items():
                out.setdefault(name, (value, self.network.profile))
        return out

    @property
    def network_annotations(self) -> dict[str, str]:
        """The pod annotations of its pools' network profile (GKE's devices and networks)."""
        if self.network is None:
            return {}
        profile = NETWORK_PROFILES[self.network.profile]
        return profile_annotations(profile, self.network.interfaces, self.config.resources.gpus)

    @cached_property
    def gang(self) -> Gang:
        """One replica as Volcano schedules it: its pods and their requests, with its sidecars' (on
        decode's view the routing sidecar's, counted on every pod of an instance although only its
        first runs one; the network profile's daemon)."""
        requests = self.pod_requests
        if self.serving_role == "decode":
            requests = with_sidecar(requests, SIDECAR_REQUESTS)
        daemon = NETWORK_PROFILES[self.network.profile].daemon_requests if self.network is not None else {}
        if daemon:
            requests = with_sidecar(requests, daemon)
        return Gang(self.config.nodes_per_replica, requests)

    @property
    def queue_tenant(self) -> str:
        return self.queue_owner or self.tenant

    @property
    def gpus_per_pod(self) -> int:
        return self.config.resources.gpus

    @property
    def pod_group_name(self) -> str:
        """The PodGroup of the model, or of its slice on a role's view of one slice."""
        return self.name if self.slice_index is None else slice_group_name(self.name, self.slice_index)

    @property
    def workload_name(self) -> str:
        """The Deployment or LeaderWorkerSet: the model's name, `<model>-s<slice>-<role>` for a role."""
        if self.serving_role is None or self.slice_index is None:
            return self.name
        return f"{slice_group_name(self.name, self.slice_index)}-{self.serving_role}"

    @property
    def key_path(self) -> str:
        """Where the stack writes this model's settings: `models.<m>`, or `models.<m>.roles.<role>`
        on a role's view."""
        if self.serving_role is None:
            return f"models.{self.name}"
        return f"models.{self.name}.roles.{self.serving_role}"

    @property
    def nodes_key(self) -> str:
        return "nodesPerInstance" if self.serving_role is not None else "nodesPerReplica"

    @property
    def api_port(self) -> int:
        """Where the Service, the pool and the monitor reach the model's pods."""
        return self.model_port or self.config.port

    @property
    def disaggregated(self) -> bool:
        """Prefill and decode apart, a slice per replica."""
        return bool(self.role_views)

    @property
    def disaggregation(self) -> DisaggregationConfig:
        return self.config.disaggregation or DisaggregationConfig()

    def role(self, name: ServingRoleName) -> ModelSpec:
        return next(view for view in self.role_views if view.serving_role == name)

    def for_slice(self, index: int) -> ModelSpec:
        """A role's view of one slice (its LWS, its pods' PodGroup)."""
        return replace(self, slice_index=index)

    def slice_views(self) -> list[ModelSpec]:
        """Every (slice, role) LeaderWorkerSet of a model with roles, slice by slice."""
        return [view.for_slice(index) for index in range(self.config.replicas) for view in self.role_views]

    @cached_property
    def slice_gang(self) -> SliceGang:
        """One slice as Volcano schedules it: a sub-group per role."""
        return SliceGang(
            tuple(
                RoleGang(
                    role=str(view.serving_role),
                    instance=view.gang,
                    min_instances=view.min_replicas,
                    max_instances=view.config.planned_replicas,
                    highest_tier=view.highest_tier,
                    mode=view.config.topology.mode if view.config.topology is not None else None,
                )
                for view in self.role_views
            )
        )

    @property
    def min_replicas(self) -> int:
        """Replicas that must run at once: `replicas`, or the autoscaler's minimum."""
        scaling = self.config.autoscaling
        return scaling.min_replicas if scaling is not None else self.config.replicas

    def peak_requests(self) -> dict[str, Decimal]:
        """Everything the model may hold at once: every replica (slice) at its peak."""
        per_replica = self.slice_gang.max_requests() if self.disaggregated else self.gang.requests()
        return {resource: amount * self.config.planned_replicas for resource, amount in per_replica.items()}

    @property
    def pod_group_names(self) -> list[str]:
        """The PodGroups the platform makes for the model (one per slice with roles)."""
        if self.disaggregated:
            return [slice_group_name(self.name, index) for index in range(self.config.replicas)]
        return [self.pod_group_name] if self.has_pod_group else []

    @property
    def has_pod_group(self) -> bool:
        """Whether the platform's PodGroup exists. A model scaled to zero has none: an Inqueue
        PodGroup without pods keeps its `minResources` counted against the queue. An autoscaled
        model keeps its PodGroup (the autoscaler may start pods at any time); one that may scale
        to zero gets it without `minResources` (`pod_group_holds_quota`)."""
        return self.own_pod_group and (self.config.replicas > 0 or self.config.autoscaling is not None)

    @property
    def pod_group_holds_quota(self) -> bool:
        """Whether the PodGroup reserves one replica's resources while no pod runs."""
        autoscaling = self.config.autoscaling
        return autoscaling is None or autoscaling.min_replicas > 0


def slice_group_name(model: str, index: int) -> str:
    """A slice's PodGroup: `<model>-s<index>`."""
    return f"{model}-s{index}"


def role_config(model: ModelConfig, name: ServingRoleName, role: ServingRole) -> ModelConfig:
    """The model's config as one role runs it: the role's resources, engine keys, environment,
    nodes per instance, topology and instances (its autoscaler as replicas), over the model's.
    Decode's vLLM listens behind the sidecar, which takes the model's port."""
    engine = model.engine
    if role.engine is not None:
        engine = engine.model_copy(update={key: getattr(role.engine, key) for key in role.engine.model_fields_set})
    scaling = role.autoscaling
    autoscaling = (
        None
        if scaling is None
        else AutoscalingConfig.model_validate(
            {
                "minReplicas": scaling.min_instances,
                "maxReplicas": scaling.max_instances,
                "metric": scaling.metric,
                "target": scaling.target,
                "pollingIntervalSeconds": scaling.polling_interval_seconds,
                "scaleDownStabilizationSeconds": scaling.scale_down_stabilization_seconds,
            }
        )
    )
    disaggregation = model.disaggregation or DisaggregationConfig()
    return model.model_copy(
        update={
            "resources": role.resources or model.resources,
            "engine": engine,
            "env": {**model.env, **role.env},
            "nodes_per_replica": role.nodes_per_instance,
            "topology": role.topology,
            "replicas": role.starting_instances,
            "autoscaling": autoscaling,
            "port": disaggregation.sidecar.vllm_port if name == "decode" else model.port,
            "roles": None,
            "adopt": (),
        }
    )


SIDECAR_REQUESTS = {"cpu": "100m", "memory": "128Mi"}
"""Requests (= limits) of decode's routing sidecar: it proxies requests and holds no model."""


def with_sidecar(requests: dict[str, str], sidecar: dict[str, str]) -> dict[str, str]:
    """A pod's requests as Volcano counts them: its server's and a sidecar's (a sidecar adds to the
    pod's requests, volcano v1.15.1 pkg/scheduler/api/pod_info.go)."""
    total = dict(requests)
    for resource, amount in sidecar.items():
        total[resource] = format_amount(quantity_value(total.get(resource, "0")) + quantity_value(amount))
    return total
