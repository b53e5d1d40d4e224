"""`models`: vLLM inference stacks, one per served model.

A model with `nodesPerReplica: 1` runs as a Deployment; with more nodes it runs as a
LeaderWorkerSet whose groups are gang-scheduled inside one network domain.
"""

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import Field, PlainValidator, WithJsonSchema, field_validator, model_validator

from config.schema.base import ConfigModel, by_shape, cli_float, invalid
from config.schema.names import (
    DnsLabel,
    DnsSubdomain,
    EnvName,
    ExtendedResourceName,
    ImageReference,
    LabelKey,
    LabelValue,
    dns_1035_problem,
)
from config.schema.quantity import Quantity
from config.sections.autoscaling import AutoscalingConfig
from config.sections.disaggregation import DisaggregationConfig, RoleAutoscaling
from config.sections.gateway import ModelGatewayConfig
from config.sections.model_placement import SpreadConfig, TopologyConstraint
from config.sections.model_source import AbsolutePath, ModelSource
from config.sections.volcano import Toleration

Port = Annotated[int, Field(ge=1, le=65535)]


class EngineConfig(ConfigModel):
    """Typed vLLM engine arguments; anything else goes in `extraArgs`."""

    tensor_parallel_size: Annotated[int, Field(ge=1)] | None = None
    """`--tensor-parallel-size`. Default: GPUs per pod."""
    pipeline_parallel_size: Annotated[int, Field(ge=1)] | None = None
    """`--pipeline-parallel-size`. Default: nodes per replica."""
    dtype: Literal["auto", "half", "float16", "bfloat16", "float", "float32"] | None = None
    """`--dtype`."""
    max_model_len: Annotated[int, Field(ge=1)] | None = None
    """`--max-model-len`."""
    gpu_memory_utilization: cli_float(gt=0, le=1) | None = None  # type: ignore[valid-type]
    """`--gpu-memory-utilization` (0-1)."""
    trust_remote_code: bool = False
    """`--trust-remote-code`."""
    enforce_eager: bool = False
    """`--enforce-eager`."""
    tool_call_parser: str | None = None
    """Enables tool calling: `--enable-auto-tool-choice --tool-call-parser <parser>`."""
    rope_scaling: dict[str, Any] | None = None
    """RoPE scaling, e.g. `{rope_type: yarn, factor: 4.0, original_max_position_embeddings: 32768}`;
    rendered as `--hf-overrides` (the old `--rope-scaling` flag is gone): `{"rope_scaling": ...}`
    before vLLM 0.12, `{"rope_parameters": {..., "rope_theta": <ropeTheta>}}` from 0.12 on, where
    models read `rope_parameters` and the override replaces it whole (so it needs `ropeTheta`). From
    0.30 on a `yarn` or `llama3` scaling also needs `maxModelLen`, rendered as the
    `max_position_embeddings` override vLLM then serves up to."""
    rope_theta: cli_float(gt=0) | None = None  # type: ignore[valid-type]
    """The model's RoPE base (`rope_theta` in its config.json, e.g. 1000000 for Qwen3). Needed
    with `ropeScaling` from vLLM 0.12 on."""
    hf_overrides: dict[str, Any] = {}
    """Further Hugging Face config overrides (`--hf-overrides`)."""
    extra_args: tuple[str, ...] = ()
    """Further `vllm serve` arguments, verbatim, one token per item: `"--max-num-seqs 128"` in one
    item is refused (vLLM exits at start); write `--max-num-seqs=128` or two items."""


class ModelResources(ConfigModel):
    """Per-pod resources; requests always equal limits so that gangs count what pods use."""

    gpus: Annotated[int, Field(ge=0, le=64)] = 1
    """GPUs per pod (per node for multi-node models)."""
    gpu_resource: ExtendedResourceName | None = None
    """GPU resource name. Default: `cluster.gpuResource`."""
    cpu: Quantity
    """CPU per pod, e.g. `12`."""
    memory: Quantity
    """Memory per pod, e.g. `64Gi`."""
    devices: dict[ExtendedResourceName, Annotated[int, Field(ge=1)]] = {}
    """Further device resources per pod, e.g. RDMA `{rdma/hca_cpta: 1}`."""


class ExtraVolume(ConfigModel):
    """A further volume in the model's pods, e.g. a vendor driver directory; exactly one source."""

    mount_path: AbsolutePath
    """Absolute path in the containers. Refused where the platform mounts something (`/dev/shm`,
    the weights' `source.mountPath`) or where it would hide the container's own system (`/`,
    `/dev`, `/proc`, `/sys`); warned about over `/etc` and the service-account token directory."""
    read_only: bool = True
    """Mount read-only. A writable `hostPath` is warned about: the pod can change the node."""
    host_path: AbsolutePath | None = None
    """Directory or file on the node; must be under `cluster.hostPaths` or the accelerator
    vendor's driver paths. A relative path or `..` is reported here. A container runtime socket
    (`containerd.sock`, `docker.sock`, `crio.sock`...) is refused: it gives the pod the node."""
    config_map: DnsSubdomain | None = None
    """ConfigMap in the model's namespace."""
    pvc: DnsSubdomain | None = None
    """PersistentVolumeClaim in the model's namespace."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        given = [k for k in ("host_path", "config_map", "pvc") if getattr(self, k) is not None]
        if len(given) != 1:
            raise invalid(
                "exactly one of hostPath, configMap or pvc must be given"
                + (f" (found {', '.join(given)})" if given else ""),
                "give the volume one source",
            )
        return self


class SecretRef(ConfigModel):
    secret: str
    """Entry of `secrets` whose value the variable takes (through a Kubernetes Secret)."""


class FieldRef(ConfigModel):
    field_path: Literal["status.podIP", "spec.nodeName", "metadata.name", "metadata.namespace"]
    """Pod field the variable takes, e.g. `status.podIP`."""


if TYPE_CHECKING:
    EnvValue = str | SecretRef | FieldRef
else:  # chosen by shape at run time, so errors come from the branch the user meant
    EnvValue = by_shape(str, SecretRef, ("fieldPath", FieldRef))


class NetworkAttachment(ConfigModel):
    name: DnsSubdomain
    """NetworkAttachmentDefinition name."""
    namespace: DnsLabel | None = None
    """Its namespace. Default: the pod's."""
    interface: str | None = None
    """Interface name in the pod (e.g. `net1`)."""


class StartupConfig(ConfigModel):
    load_timeout_seconds: Annotated[int, Field(ge=30, le=24 * 3600)] = 1800
    """Budget for loading the weights before the pod counts as failed (startupProbe on
    `/health`; also raises `VLLM_ENGINE_READY_TIMEOUT_S`)."""
    place_timeout_seconds: Annotated[int, Field(ge=30, le=24 * 3600)] = 600
    """Budget for placing the pods (a gang waits for room in its domain) and pulling the image,
    before loading starts. `pulumi up` waits this plus the load budget for the model to run (a
    Deployment's replicas ready, every LeaderWorkerSet `Available`), and fails when it does not,
    naming the object and, for a gang, what Volcano wrote on its PodGroup."""
    probe_period_seconds: Annotated[int, Field(ge=1, le=300)] = 10
    """Period of the startup, readiness and liveness probes."""


class RayConfig(ConfigModel):
    port: Port = 6379
    """Ray head port on the leader."""
    group_timeout_seconds: Annotated[int, Field(ge=10, le=24 * 3600)] = 600
    """How long the leader waits for all workers to join before failing (the group restarts)."""


def _count_or_percent(value: object) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{1,3}%", value):
        return value
    raise invalid(f"`{value}` is neither a number of replicas nor a percentage", "write e.g. `1` or `25%`")


CountOrPercent = Annotated[
    int | str,
    PlainValidator(_count_or_percent),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": r"^\d{1,3}%$"}]}),
]


class RolloutConfig(ConfigModel):
    max_unavailable: CountOrPercent = 1
    """Replicas that may be down during an update (a number, or a percentage such as `25%`)."""
    max_surge: CountOrPercent = 0
    """Extra replicas during an update (each needs free GPUs)."""


class ServingRole(ConfigModel):
    """One role of a slice (`prefill` or `decode`): its instances, each one LeaderWorkerSet group
    placed inside one network domain. Unset keys take the model's."""

    instances: Annotated[int, Field(ge=0, le=1000)] = 1
    """Instances per slice. Under `autoscaling` the count it starts with (default: its
    `minInstances`)."""
    nodes_per_instance: Annotated[int, Field(ge=1, le=64)] = 1
    """Nodes (pods) per instance; more than one runs the instance as a Ray cluster."""
    resources: ModelResources | None = None
    """Per-pod resources. Default: the model's."""
    engine: EngineConfig | None = None
    """vLLM engine arguments; the keys given replace the model's."""
    env: dict[EnvName, EnvValue] = {}
    """Further environment variables, over the model's."""
    topology: TopologyConstraint | None = None
    """Where each instance may be placed, e.g. `{mode: hard, highestTier: 1}` (one leaf); at most
    the slice's tier (the model's `topology`)."""
    autoscaling: RoleAutoscaling | None = None
    """The role's instances per slice follow its load."""

    @property
    def starting_instances(self) -> int:
        if self.autoscaling is None or "instances" in self.model_fields_set:
            return self.instances
        return self.autoscaling.min_instances

    @property
    def min_instances(self) -> int:
        return self.autoscaling.min_instances if self.autoscaling is not None else self.instances

    @property
    def max_instances(self) -> int:
        return self.autoscaling.max_instances if self.autoscaling is not None else self.instances


class ServingRoles(ConfigModel):
    """The two roles of a slice."""

    prefill: ServingRole
    """Instances that read prompts and hand the KV cache to decode."""
    decode: ServingRole
    """Instances that take every request (through their sidecar) and write the answers."""


class ModelConfig(ConfigModel):
    """One served model; the key names its workload (Deployment or LeaderWorkerSet)."""

    tenant: str
    """Tenant whose queue and namespace the model runs in."""
    namespace: DnsLabel | None = None
    """Namespace (one of the tenant's). Default: the tenant's first namespace."""
    image: ImageReference
    """vLLM image, with a tag or digest. Refused when its name says it is built for another
    accelerator than the model's (a CUDA `vllm-openai` on Ascend or AMD, a ROCm or Ascend build
    elsewhere), or when its registry port is outside 1-65535."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    """Image pull policy of the containers."""
    image_pull_secrets: tuple[str, ...] = ()
    """Entries of `registries` to pull the image with; an entry whose `server` is neither the
    image's registry nor `cluster.mirror.registry` is refused (the kubelet would never use it)."""
    vllm_version: Annotated[str, Field(pattern=r"^v?\d+\.\d+(\.\d+)?$")] | None = None
    """vLLM version in the image, for flag checks. Default: read from the image tag when it
    starts with a version, else the current release. Refused when the tag names another release."""
    source: ModelSource
    served_model_name: str | None = None
    """`--served-model-name`. Default: the model key."""
    engine: EngineConfig = EngineConfig()
    """vLLM engine arguments."""
    entrypoint: Literal["serve", "api-server"] = "serve"
    """`serve` (`vllm serve`) or `api-server` (the older, deprecated module entrypoint)."""
    port: Port = 8000
    """HTTP port of the OpenAI-compatible server."""
    env: dict[EnvName, EnvValue] = {}
    """Environment variables: plain strings, `{secret: <name>}` or `{fieldPath: ...}`. A workload
    estimated above 1.5 MiB (etcd's default request limit; env, args, labels, annotations) is
    refused at its largest part: the API server could not store it."""
    resources: ModelResources
    networks: tuple[NetworkAttachment, ...] = ()
    """Secondary networks (Multus), e.g. RDMA NICs."""
    volumes: dict[DnsLabel, ExtraVolume] = {}
    """Further volumes keyed by name, e.g. `{ascend-driver: {hostPath: /usr/local/Ascend/driver,
    mountPath: /usr/local/Ascend/driver}}`."""
    shm_size_gi: Annotated[int, Field(ge=1, le=2048)] = 16
    """Size of the `/dev/shm` memory volume in GiB (counts against the pod's memory)."""
    seccomp_profile: Literal["RuntimeDefault", "Unconfined"] = "RuntimeDefault"
    """Container seccomp profile; `Unconfined` only where a vendor runtime needs it."""
    capabilities: tuple[str, ...] | None = None
    """Added Linux capabilities. Default: `IPC_LOCK` when RDMA devices are requested."""
    priority_class: str
    """PriorityClass of the pods and their PodGroup."""
    preemptable: bool = True
    """Whether higher-priority work may evict these pods."""
    replicas: Annotated[int, Field(ge=0, le=10_000)] = 1
    """Replicas (LWS groups for multi-node models; slices with `roles`). With `autoscaling` the
    autoscaler owns the count and this key is not used."""
    autoscaling: AutoscalingConfig | None = None
    """Scale with load between `minReplicas` and `maxReplicas` (KEDA or an HPA). Needs
    `observability.enabled`: the autoscaler follows the model's scraped vLLM metrics."""
    nodes_per_replica: Annotated[int, Field(ge=1, le=1024)] = 1
    """Nodes (pods) per replica; more than one makes a LeaderWorkerSet."""
    topology: TopologyConstraint | None = None
    """Network placement of each replica (multi-node models), or of each slice (with `roles`)."""
    spread: SpreadConfig | None = None
    """How the replicas spread over hosts or network domains, so that one lost node or domain
    takes as few of them as possible. Unset, replicas go where binpacking puts them, which keeps
    whole nodes free for multi-node gangs; the what-if says whether a model keeps serving when one
    node is lost."""
    roles: ServingRoles | None = None
    """Serve prefill and decode apart: each replica is a slice of prefill and decode instances,
    gang-scheduled together (`disaggregation` says how they share the KV cache)."""
    disaggregation: DisaggregationConfig | None = None
    """KV transfer, sidecar and request split of a model with `roles`. Default: NixlConnector
    over UCX."""
    startup: StartupConfig = StartupConfig()
    """Load budget and probe timing."""
    ray: RayConfig = RayConfig()
    """Ray cluster of a multi-node replica."""
    rollout: RolloutConfig = RolloutConfig()
    """Rolling-update limits of the Deployment or LeaderWorkerSet."""
    service_name: str | None = None
    """Name of the model's Service. Default: the model key (`<key>-leader` for multi-node
    models, whose key is taken by the LWS headless Service)."""
    pools: tuple[DnsLabel, ...] = ()
    """Node pools (`pools`) the model runs on: its pods select their nodes (one pool: a node
    selector; several: node affinity, any of them) and tolerate their taints, and placement counts
    only their nodes. Default: every pool its `nodeSelector`, `tolerations` and GPU resource allow."""
    node_selector: dict[LabelKey, LabelValue] = {}
    """Node selector of the pods (e.g. a GPU model label). On a stack with `pools`, a label no
    pool declares, or a value no pool's nodes carry, is refused."""
    tolerations: tuple[Toleration, ...] = ()
    """Tolerations of the pods (e.g. for tainted GPU nodes). On a stack with `pools`, one that
    matches no pool's taint is refused (Kubernetes' own `node.kubernetes.io/` taints aside)."""
    adopt: tuple[Literal["workload", "service", "podGroup"], ...] = ()
    """Objects of this model that already exist (made by hand) and that the stack takes over
    instead of creating: `workload` (its Deployment or LeaderWorkerSet), `service`, `podGroup`.
    `pulumi up` imports them and updates what differs in place; fields that cannot change (a
    Deployment's selector) must already match, or the object must be recreated (`preflight`
    lists both). `podGroup` is refused where the platform makes none (single-node models, LWS
    gang scheduling, zero replicas)."""
    gateway: ModelGatewayConfig = ModelGatewayConfig()
    """Serve the model through the inference gateway (`gateway` section): an InferencePool over
    its serving pods, a router of its own, a route per consuming tenant."""
    labels: dict[LabelKey, LabelValue] = {}
    """Extra labels on the workload and its pods."""
    annotations: dict[LabelKey, str] = {}
    """Extra pod annotations."""

    @field_validator("service_name")
    @classmethod
    def _service_name(cls, value: str | None) -> str | None:
        if value is not None and (problem := dns_1035_problem(value)):
            raise invalid(f"service name `{value}` {problem}", "use a DNS-1035 label such as `qwen-8b`")
        return value

    @property
    def multi_node(self) -> bool:
        return self.nodes_per_replica > 1

    @property
    def disaggregated(self) -> bool:
        """Prefill and decode apart (`roles`)."""
        return self.roles is not None

    @property
    def uses_lws(self) -> bool:
        """Runs as LeaderWorkerSets (a multi-node model, or each role of a slice)."""
        return self.multi_node or self.disaggregated

    @property
    def starting_replicas(self) -> int:
        """Replicas a new workload starts with: `replicas`, or under an autoscaler its
        `minReplicas` unless `replicas` says where to start."""
        if self.autoscaling is None or "replicas" in self.model_fields_set:
            return self.replicas
        return self.autoscaling.min_replicas

    @property
    def planned_replicas(self) -> int:
        """The most replicas the model can run: `maxReplicas` under an autoscaler. Placement
        and quota checks count this many."""
        return self.autoscaling.max_replicas if self.autoscaling is not None else self.replicas

    @property
    def effective_capabilities(self) -> tuple[str, ...]:
        """Explicit list, else IPC_LOCK when RDMA devices are requested (memory registration)."""
        if self.capabilities is not None:
            return self.capabilities
        return ("IPC_LOCK",) if any("rdma" in device.lower() for device in self.resources.devices) else ()

    @property
    def tensor_parallel(self) -> int:
        return self.engine.tensor_parallel_size or max(self.resources.gpus, 1)

    @property
    def pipeline_parallel(self) -> int:
        return self.engine.pipeline_parallel_size or self.nodes_per_replica

    @property
    def data_parallel(self) -> int:
        """vLLM's `--data-parallel-size` (`-dp`) as `engine.extraArgs` give it, else 1: the engine
        runs that many copies of the model, each over tensor x pipeline parallel GPUs."""
        args = self.engine.extra_args
        for index, arg in enumerate(args):
            name, equals, value = arg.partition("=")
            if name in ("--data-parallel-size", "-dp"):
                given = value if equals else (args[index + 1] if index + 1 < len(args) else "")
                return int(given) if given.isdigit() and int(given) > 0 else 1
        return 1
