"""Names of the inference gateway: Gateway API, the Inference Extension's InferencePool and
InferenceObjective, and llm-d's endpoint picker (the router) the stack deploys per model.

The router is `github.com/llm-d/llm-d-inference-scheduler` v0.7.1: its `cmd/epp` is the Inference
Extension's EPP runner (`sigs.k8s.io/gateway-api-inference-extension` v1.4.0, `cmd/epp/runner`)
with llm-d's plugins registered. It is the newest release of llm-d's router whose Go module is
served, so the end-to-end tests run the very code the stack deploys (docs/decisions.md, "The
router the gateway pins"). Every fact below is read at those two tags.
"""

from __future__ import annotations

from typing import Final

ROUTER_VERSION: Final = "0.7.1"
# llm-d-inference-scheduler v0.7.1 Makefile: IMAGE_REGISTRY ghcr.io/llm-d, image named after the project.
ROUTER_IMAGE_REPOSITORY: Final = "ghcr.io/llm-d/llm-d-inference-scheduler"
ROUTER_IMAGE_PATH: Final = "llm-d/llm-d-inference-scheduler"  # the same image under a mirror
ROUTER_SUFFIX: Final = "-epp"
"""A model's router objects are named `<model>-epp` (ConfigMap, Deployment, Service, RBAC)."""

# gateway-api-inference-extension v1.4.0, config/charts/epplib/templates/_deployment.yaml.
ROUTER_GRPC_PORT: Final = 9002  # Envoy ext-proc
ROUTER_HEALTH_PORT: Final = 9003  # gRPC health: service `inference-extension` with one replica
ROUTER_METRICS_PORT: Final = 9090
ROUTER_HEALTH_SERVICE: Final = "inference-extension"
ROUTER_CONFIG_FILE: Final = "config.yaml"
ROUTER_CONFIG_DIR: Final = "/config"

INFERENCE_POOL_API_VERSION: Final = "inference.networking.k8s.io/v1"
INFERENCE_POOL_GROUP: Final = "inference.networking.k8s.io"
# v1.4.0 apix/v1alpha2 (the router's objectives; llm-d moved them to llm-d.ai only later).
INFERENCE_OBJECTIVE_API_VERSION: Final = "inference.networking.x-k8s.io/v1alpha2"
INFERENCE_OBJECTIVE_GROUP: Final = "inference.networking.x-k8s.io"
# v1.4.0 pkg/epp/config/loader: the config file's group (`EndpointPickerConfig`).
ROUTER_CONFIG_API_VERSION: Final = "inference.networking.x-k8s.io/v1alpha1"
ROUTER_MAX_TARGET_PORTS: Final = 8  # api/v1/inferencepool_types.go, targetPorts MaxItems

GATEWAY_API_VERSION: Final = "gateway.networking.k8s.io/v1"
# GatewayClass `controllerName`s of Envoy-based implementations (Istio, Envoy Gateway, kgateway),
# whose router filter adds a route's request headers when it forwards the request, after every HTTP
# filter (the endpoint picker's ext-proc among them) has run: Envoy Gateway's docs say a route's
# RequestHeaderModifier "will only modify headers before the request is sent from Envoy to the
# upstream service" (gateway.envoyproxy.io, tasks/traffic/http-request-headers).
ENVOY_CONTROLLERS: Final = frozenset(
    {"istio.io/gateway-controller", "gateway.envoyproxy.io/gatewayclass-controller", "kgateway.dev/kgateway"}
)
GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
GATEWAY_LISTENERS_MAX: Final = 64  # gateway-api v1.5.1 apis/v1/gateway_types.go, listeners MaxItems

# v1.4.0 pkg/epp/metadata/consts.go: how a request names its objective and its fairness flow.
OBJECTIVE_HEADER: Final = "x-gateway-inference-objective"
FAIRNESS_HEADER: Final = "x-gateway-inference-fairness-id"
# The header HTTPRoutes match a model by (set from the body's `model` by the Inference
# Extension's body-based router, or by the gateway itself): v1.4.0 pkg/bbr.
MODEL_HEADER: Final = "X-Gateway-Model-Name"

# v1.4.0 pkg/epp/flowcontrol/config.go: flow control is this feature gate, off by default.
FLOW_CONTROL_GATE: Final = "flowControl"
# v1.4.0 pkg/epp/datalayer/factory.go: plugins' PrepareData phase (the prefix cache's match per
# endpoint, which llm-d's `prefix-based-pd-decider` reads) runs only with this gate.
PREPARE_DATA_GATE: Final = "prepareDataPlugins"
# v1.4.0 pkg/epp/flowcontrol/framework/plugins/{fairness,ordering}: the policies' plugin types.
FAIRNESS_POLICIES: Final = {
    "round-robin": "round-robin-fairness-policy",
    "strict": "global-strict-fairness-policy",
}
FCFS_ORDERING: Final = "fcfs-ordering-policy"
# v1.4.0 config/charts/epplib/templates/_config.yaml: the default plugins and their weights.
DEFAULT_SCORERS: Final = (("queue-scorer", 2), ("kv-cache-utilization-scorer", 2), ("prefix-cache-scorer", 3))

# v1.4.0 pkg/epp/metrics/metrics.go: the router's series the platform reads.
QUEUE_SIZE_METRIC: Final = "inference_extension_flow_control_queue_size"
"""Requests the router holds, labelled `inference_pool`, `priority`, `fairness_id`."""
QUEUE_DURATION_METRIC: Final = "inference_extension_flow_control_request_queue_duration_seconds"
"""Time in the queue, labelled as above plus `outcome` (`Dispatched`, `RejectedCapacity`,
`EvictedTTL`, ...)."""
READY_PODS_METRIC: Final = "inference_pool_ready_pods"
"""Ready endpoints of a pool, labelled `name`."""
REQUEST_TOTAL_METRIC: Final = "inference_objective_request_total"
"""Requests per objective, labelled `model_name`, `target_model_name`."""
ROUTER_SERIES: Final = frozenset(
    {
        QUEUE_SIZE_METRIC,
        "inference_extension_flow_control_queue_bytes",
        f"{QUEUE_DURATION_METRIC}_bucket",
        f"{QUEUE_DURATION_METRIC}_count",
        f"{QUEUE_DURATION_METRIC}_sum",
        READY_PODS_METRIC,
        "inference_pool_average_queue_size",
        "inference_pool_average_kv_cache_utilization",
        REQUEST_TOTAL_METRIC,
        "inference_objective_request_error_total",
    }
)
"""Every router series the platform's queries may name (v1.4.0 `pkg/epp/metrics/metrics.go`)."""

# Prefill and decode apart. llm-d-inference-scheduler v0.7.1 `cmd/pd-sidecar`, whose image the
# Makefile names `llm-d-routing-sidecar` (SIDECAR_IMAGE_NAME) under ghcr.io/llm-d.
SIDECAR_IMAGE_REPOSITORY: Final = "ghcr.io/llm-d/llm-d-routing-sidecar"
SIDECAR_IMAGE_PATH: Final = "llm-d/llm-d-routing-sidecar"
# pkg/sidecar/proxy/options.go: the `--kv-connector`s it speaks (nixlv2, shared-storage, sglang);
# the platform's connector -> the sidecar's name for it.
SIDECAR_KV_CONNECTORS: Final = {"nixl": "nixlv2"}
# pkg/plugins/filter/roles.go: the label the router's `prefill-filter` and `decode-filter` read.
ROUTER_ROLE_LABEL: Final = "llm-d.ai/role"
# vLLM `vllm/config/kv_transfer.py` (KVTransferConfig) and docs/features/nixl_connector_usage.md:
# the connector class, and the side channel each instance exchanges KV-cache metadata on.
VLLM_KV_CONNECTORS: Final = {"nixl": "NixlConnector"}
NIXL_SIDE_CHANNEL_HOST_ENV: Final = "VLLM_NIXL_SIDE_CHANNEL_HOST"
NIXL_SIDE_CHANNEL_PORT_ENV: Final = "VLLM_NIXL_SIDE_CHANNEL_PORT"

# The Inference Extension chart's `istio` provider (v1.4.0 config/charts/inferencepool/templates/
# istio.yaml): a DestinationRule on the router's Service host that originates TLS and skips
# verifying the router's self-made certificate. Istio wires the ext-proc call to that Service's
# cluster and takes its TLS from the rule (istio 1.30 pilot/pkg/networking/core/route/route.go).
ISTIO_CLASSES: Final = frozenset({"istio"})
DESTINATION_RULE_API_VERSION: Final = "networking.istio.io/v1"
