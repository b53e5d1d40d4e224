"""What prefill and decode of a slice need to share the KV cache (pure): vLLM's KV-transfer
configuration, NIXL's side channel, and the routing sidecar beside each decode vLLM.

Both roles run vLLM with NixlConnector (`kv_role` is a placeholder for it: the sidecar decides who
prefills, vLLM docs/features/nixl_connector_usage.md). Each instance advertises its pod IP on the
side channel, where peers exchange KV-cache metadata before they read blocks over UCX. The sidecar
(llm-d-inference-scheduler v0.7.1 `cmd/pd-sidecar`) takes the model's port on decode pods: a
request the router sent with a prefill pod named goes there first (max_tokens 1), then to the
local vLLM behind it on `sidecar.vllmPort`.
"""

from __future__ import annotations

import json
from typing import Any

from config.spec.model import SIDECAR_REQUESTS, ModelSpec
from config.upstream.inference_gateway import (
    NIXL_SIDE_CHANNEL_HOST_ENV,
    NIXL_SIDE_CHANNEL_PORT_ENV,
    SIDECAR_KV_CONNECTORS,
    VLLM_KV_CONNECTORS,
)

NIXL_PORT_NAME = "nixl"
SIDECAR_NAME = "routing-sidecar"


def kv_transfer_arguments(model: ModelSpec) -> list[str]:
    """`--kv-transfer-config` of a role's vLLM."""
    settings = model.disaggregation
    config = {
        "kv_connector": VLLM_KV_CONNECTORS[settings.connector],
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"backends": list(settings.nixl.backends)},
    }
    return ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]


def kv_transfer_env(model: ModelSpec) -> list[dict[str, Any]]:
    """NIXL's side channel on the pod's own address (a pod with several NICs would advertise
    another), and UCX's transports when the stack names them."""
    nixl = model.disaggregation.nixl
    env: list[dict[str, Any]] = [
        {"name": NIXL_SIDE_CHANNEL_HOST_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": NIXL_SIDE_CHANNEL_PORT_ENV, "value": str(nixl.side_channel_port)},
    ]
    if nixl.ucx_tls:
        env.append({"name": "UCX_TLS", "value": nixl.ucx_tls})
    if nixl.ucx_net_devices:
        env.append({"name": "UCX_NET_DEVICES", "value": nixl.ucx_net_devices})
    return [e for e in env if e["name"] not in model.config.env]


def nixl_port(model: ModelSpec) -> dict[str, Any]:
    return {"name": NIXL_PORT_NAME, "containerPort": model.disaggregation.nixl.side_channel_port, "protocol": "TCP"}


def routing_sidecar(model: ModelSpec, api_port: int) -> dict[str, Any]:
    """The decode pod's sidecar, a native sidecar (an init container that keeps running) so it is
    up before vLLM and stops after it.

    Its SSRF protection (`--enable-ssrf-protection`, prefill only on the pool's pods) stays off: at
    v0.7.1 it reads a v1 InferencePool's selector as a flat label map (`pkg/sidecar/proxy/
    allowlist.go`, `updatePodsForPool`), lists no pod, and refuses every prefill, as
    tests/e2e/test_disaggregated_router.py shows; `check` warns that the sidecar trusts the
    `x-prefiller-host-port` a caller sends."""
    settings = model.disaggregation
    args = [
        f"--port={api_port}",
        f"--vllm-port={settings.sidecar.vllm_port}",
        f"--kv-connector={SIDECAR_KV_CONNECTORS[settings.connector]}",
        # Plain HTTP inside the pod network, as the router and the gateway speak to the model.
        "--secure-proxy=false",
    ]
    return {
        "name": SIDECAR_NAME,
        "image": str(model.sidecar_image),
        "imagePullPolicy": model.config.image_pull_policy,
        "restartPolicy": "Always",
        "args": args,
        "ports": [{"name": "http", "containerPort": api_port, "protocol": "TCP"}],
        "resources": {"requests": dict(SIDECAR_REQUESTS), "limits": dict(SIDECAR_REQUESTS)},
        "readinessProbe": {"tcpSocket": {"port": api_port}, "periodSeconds": 5},
        "securityContext": {"allowPrivilegeEscalation": False},
    }
