"""`models.<m>.roles` and `models.<m>.disaggregation`: a model served with prefill and decode apart.

Prefill (reading the prompt) and decode (writing the answer) run as separate vLLM instances that
pass the KV cache over the fabric (vLLM's NixlConnector). A replica of such a model is a *slice*:
some prefill and some decode instances that work together, gang-scheduled by one Volcano PodGroup
whose `networkTopology` keeps the slice inside one domain (a spine, the model's `topology`) while a
sub-group per role keeps each instance inside a narrower one (a leaf, the role's `topology`). Each
role of each slice is a LeaderWorkerSet of its own; its groups are the role's instances.

Requests reach decode first, through llm-d's routing sidecar beside each decode vLLM: given a
prefill pod (by the slice's router, behind the gateway), it sends the prefill there, then decodes
locally; given none, decode prefills itself (docs/operations.md, "Prefill and decode apart").
"""

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from config.schema.base import ConfigModel, cli_float, invalid
from config.schema.names import ImageReference
from config.sections.autoscaling import AutoscalingMetric

Port = Annotated[int, Field(ge=1, le=65535)]
ServingRoleName = Literal["prefill", "decode"]
SERVING_ROLES: tuple[ServingRoleName, ...] = ("prefill", "decode")


class RoleAutoscaling(ConfigModel):
    """A role's instances per slice follow its load (a KEDA ScaledObject per slice and role)."""

    min_instances: Annotated[int, Field(ge=0, le=1000)] = 1
    """Fewest instances per slice. Decode needs at least one (it serves every request); prefill
    may go to zero, and decode then runs the prefill itself."""
    max_instances: Annotated[int, Field(ge=1, le=1000)]
    """Most instances per slice; placement and quota checks count this many."""
    metric: AutoscalingMetric = "requestsWaiting"
    """vLLM metric of the role's pods in the slice: `requestsWaiting`, `requestsRunning` or
    `kvCacheUsage` (0..1), averaged over its instances."""
    target: cli_float(gt=0)  # type: ignore[valid-type]
    """Per-instance value to hold."""
    polling_interval_seconds: Annotated[int, Field(ge=5, le=3600)] = 30
    """How often KEDA queries Prometheus."""
    scale_down_stabilization_seconds: Annotated[int, Field(ge=0, le=3600)] = 300
    """Scale down only to the highest count wanted in this window."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.min_instances > self.max_instances:
            raise invalid(
                f"minInstances {self.min_instances} is above maxInstances {self.max_instances}",
                "raise `maxInstances` or lower `minInstances`",
            )
        if self.metric == "kvCacheUsage" and self.target >= 1:
            raise invalid(
                f"a kvCacheUsage target of {self.target} is never reached (usage is 0..1)", "use a fraction such as 0.8"
            )
        return self


class NixlSettings(ConfigModel):
    """NixlConnector's transport (vLLM docs/features/nixl_connector_usage.md)."""

    backends: Annotated[
        tuple[Literal["UCX", "LIBFABRIC", "GDS", "GDS_MT", "POSIX", "OBJ"], ...], Field(min_length=1)
    ] = ("UCX",)
    """NIXL backends (`kv_connector_extra_config.backends`), UCX first by default; at least one (with
    none, NIXL has no way to move the KV cache and every transfer fails)."""
    side_channel_port: Port = 5600
    """`VLLM_NIXL_SIDE_CHANNEL_PORT`: where each vLLM instance meets its peers to exchange the
    KV-cache metadata (the port of data-parallel rank 0; rank r listens on port + r)."""
    ucx_tls: str | None = None
    """`UCX_TLS`, the UCX transports, e.g. `rc,cuda_copy,cuda_ipc`. Default: UCX's own choice."""
    ucx_net_devices: str | None = None
    """`UCX_NET_DEVICES`, e.g. `mlx5_0:1`. Default: UCX's own choice."""


class SidecarConfig(ConfigModel):
    """llm-d's routing sidecar beside each decode vLLM: it takes the request, sends the prefill to
    the prefill pod the router chose, and decodes locally."""

    image: ImageReference | None = None
    """Its image. Default: `ghcr.io/llm-d/llm-d-routing-sidecar:v<router version>` (under
    `cluster.mirror.registry` when set)."""
    vllm_port: Port = 8200
    """Port of the decode vLLM behind the sidecar (the sidecar takes the model's `port`, and one
    port above it per data-parallel rank)."""


class DisaggregationConfig(ConfigModel):
    """How prefill and decode of a slice share the KV cache, and how requests pick them."""

    connector: Literal["nixl"] = "nixl"
    """KV-transfer connector: `nixl` (vLLM's NixlConnector; the sidecar's `nixlv2`)."""
    nixl: NixlSettings = NixlSettings()
    sidecar: SidecarConfig = SidecarConfig()
    ratio: "RoleRatio | None" = None
    """Bounds of prefill instances per decode instance in a slice, e.g. `{min: 0.5, max: 4}`:
    the prefill autoscaler's target is clamped to them."""
    non_cached_tokens: Annotated[int, Field(ge=1, le=1_000_000)] = 16
    """Behind the gateway: the router sends a request's prefill to a prefill instance when at least
    this many of its prompt's tokens are not in the chosen decode pod's prefix cache; a shorter
    remainder is prefilled on decode. Tokens are estimated at 4 characters each, of the prompt of a
    completion or of a chat's messages as JSON. The router's `prefix-based-pd-decider`; 16 is the
    value of llm-d-inference-scheduler v0.7.1's `deploy/config/pd-epp-config.yaml`."""


class RoleRatio(ConfigModel):
    min: cli_float(ge=0) = 0.0  # type: ignore[valid-type]
    """Fewest prefill instances per running decode instance."""
    max: cli_float(gt=0)  # type: ignore[valid-type]
    """Most prefill instances per running decode instance."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.min > self.max:
            raise invalid(f"ratio min {self.min} is above max {self.max}", "give `min` at most `max`")
        return self


DisaggregationConfig.model_rebuild()
