"""The pod template of a model (pure), shared by Deployments and LeaderWorkerSets.

Every pod joins Volcano the same way: `schedulerName: volcano`, the queue annotation on the pod
(an annotation on the workload object is ignored), a priority class and requests equal to limits
for every device, because PodGroup `minResources` and the queue quotas count requests only.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from components.inference.kv_transfer import kv_transfer_env, nixl_port, routing_sidecar
from components.inference.network_profile import network_daemon, network_mounts, network_volumes
from components.inference.vllm_command import entrypoint, leader_script, server_arguments, worker_script
from config.platform_labels import ROLE_LABEL, SERVING_ROLE_LABEL, SLICE_LABEL, model_labels, model_selector
from config.sections.models import FieldRef, SecretRef
from config.spec.model import ModelSpec
from config.upstream.accelerators import AMD_RAY_NOSET_ENV
from config.upstream.inference_gateway import ROUTER_ROLE_LABEL
from config.upstream.kubernetes import MULTUS_ANNOTATION
from config.upstream.lws import LWS_WORKER_INDEX_LABEL
from config.upstream.vllm_releases import (
    ENGINE_READY_DEFAULT_SECONDS,
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_SINCE,
    RAY_NOSET_BY_VLLM_SINCE,
)
from config.upstream.volcano import (
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO_SCHEDULER_NAME,
)

Role = Literal["server", "leader", "worker"]
SECRET_KEY = "value"
MODEL_VOLUME = "model"
SHM_VOLUME = "dshm"


def _env(model: ModelSpec, role: Role) -> list[dict[str, Any]]:
    cfg = model.config
    env: list[dict[str, Any]] = []
    for name, value in cfg.env.items():
        if isinstance(value, SecretRef):
            env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": value.secret, "key": SECRET_KEY}}})
        elif isinstance(value, FieldRef):
            env.append({"name": name, "valueFrom": {"fieldRef": {"fieldPath": value.field_path}}})
        else:
            env.append({"name": name, "value": value})
    if cfg.source.hub and cfg.source.hub.token_secret:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": cfg.source.hub.token_secret, "key": SECRET_KEY}},
            }
        )
    if model.multi_node:
        # With several NICs vLLM must advertise the pod's own address to its peers.
        env.append({"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if (
        model.multi_node
        and model.vendor == "amd"
        and model.vllm_version < RAY_NOSET_BY_VLLM_SINCE
        and AMD_RAY_NOSET_ENV not in cfg.env
    ):
        # Older releases leave it to the image; not every ROCm image sets it (`config.upstream.accelerators`).
        env.append({"name": AMD_RAY_NOSET_ENV, "value": "1"})
    for name, (value, _) in model.interconnect_env.items():
        if name not in cfg.env and all(e["name"] != name for e in env):
            env.append({"name": name, "value": value})
    if model.serving_role is not None:
        env += kv_transfer_env(model)
    budget = cfg.startup.load_timeout_seconds
    # Only releases that read the variable get it; older ones hard-code the wait (a warning says so).
    if (
        role != "worker"
        and budget > ENGINE_READY_DEFAULT_SECONDS
        and model.vllm_version >= ENGINE_READY_TIMEOUT_SINCE
        and ENGINE_READY_TIMEOUT_ENV not in cfg.env
    ):
        env.append({"name": ENGINE_READY_TIMEOUT_ENV, "value": str(budget)})
    return env


def _probes(model: ModelSpec) -> dict[str, Any]:
    """startupProbe sized to the load budget, then readiness and liveness on `/health` (which
    answers 503 once the engine has died)."""
    startup = model.config.startup
    period = startup.probe_period_seconds
    health = {"path": "/health", "port": api_port_name(model)}
    return {
        "startupProbe": {
            "httpGet": health,
            "periodSeconds": period,
            "timeoutSeconds": 5,
            "failureThreshold": math.ceil(startup.load_timeout_seconds / period),
        },
        "readinessProbe": {"httpGet": health, "periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"httpGet": health, "periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": 6},
    }


def api_port_name(model: ModelSpec) -> str:
    """The name of vLLM's port: `http`, except behind decode's sidecar, which takes that name (the
    port the Service, the pool and the monitor reach the pod on)."""
    return "vllm" if model.serving_role == "decode" else "http"


def container(model: ModelSpec, role: Role) -> dict[str, Any]:
    cfg = model.config
    resources = dict(model.pod_requests)
    spec: dict[str, Any] = {
        "name": {"server": "vllm", "leader": "leader", "worker": "worker"}[role],
        "image": cfg.image,
        "imagePullPolicy": cfg.image_pull_policy,
    }
    if role == "server":
        spec["command"], spec["args"] = entrypoint(model), server_arguments(model)
    else:
        spec["command"] = ["/bin/sh", "-c"]
        spec["args"] = [leader_script(model) if role == "leader" else worker_script(model)]
    env = _env(model, role)
    if env:
        spec["env"] = env
    ports: list[dict[str, Any]] = []
    if role != "worker":
        ports.append({"name": api_port_name(model), "containerPort": cfg.port, "protocol": "TCP"})
        if model.serving_role is not None:
            ports.append(nixl_port(model))
    if role == "leader":
        ports.append({"name": "ray", "containerPort": cfg.ray.port, "protocol": "TCP"})
    if ports:
        spec["ports"] = ports
    spec["resources"] = {"requests": resources, "limits": dict(resources)}
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    if cfg.source.hub is None:
        mounts.append({"name": MODEL_VOLUME, "mountPath": cfg.source.mount_path, "readOnly": True})
    for name, volume in cfg.volumes.items():
        mounts.append({"name": name, "mountPath": volume.mount_path, "readOnly": volume.read_only})
    mounts += network_mounts(model)
    spec["volumeMounts"] = mounts
    if role != "worker":
        spec.update(_probes(model))
    caps = cfg.effective_capabilities
    if caps:
        spec["securityContext"] = {"capabilities": {"add": list(caps)}}
    return spec


def _volumes(model: ModelSpec) -> list[dict[str, Any]]:
    cfg = model.config
    volumes: list[dict[str, Any]] = [
        {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": f"{cfg.shm_size_gi}Gi"}}
    ]
    source = cfg.source
    if source.nfs:
        volumes.append(
            {"name": MODEL_VOLUME, "nfs": {"server": source.nfs.server, "path": source.nfs.path, "readOnly": True}}
        )
    elif source.pvc:
        volumes.append(
            {"name": MODEL_VOLUME, "persistentVolumeClaim": {"claimName": source.pvc.claim_name, "readOnly": True}}
        )
    elif source.host_path:
        volumes.append({"name": MODEL_VOLUME, "hostPath": {"path": source.host_path.path, "type": "Directory"}})
    for name, volume in cfg.volumes.items():
        if volume.host_path is not None:
            volumes.append({"name": name, "hostPath": {"path": volume.host_path}})
        elif volume.config_map is not None:
            volumes.append({"name": name, "configMap": {"name": volume.config_map}})
        elif volume.pvc is not None:
            volumes.append(
                {"name": name, "persistentVolumeClaim": {"claimName": volume.pvc, "readOnly": volume.read_only}}
            )
    return volumes + network_volumes(model)


def pod_annotations(model: ModelSpec) -> dict[str, str]:
    cfg = model.config
    annotations = {
        QUEUE_ANNOTATION: model.queue,
        PREEMPTABLE_ANNOTATION: "true" if cfg.preemptable else "false",
    }
    if model.own_pod_group:
        annotations[GROUP_NAME_ANNOTATION] = model.pod_group_name
    if cfg.networks:
        annotations[MULTUS_ANNOTATION] = json.dumps(
            [n.model_dump(by_alias=True, exclude_none=True) for n in cfg.networks], separators=(",", ":")
        )
    return {**cfg.annotations, **model.network_annotations, **annotations}


def pod_template(model: ModelSpec, role: Role) -> dict[str, Any]:
    cfg = model.config
    labels = {**cfg.labels, **model_labels(model.name, model.tenant)}
    if role != "server":
        labels[ROLE_LABEL] = role
    if model.serving_role is not None and model.slice_index is not None:
        labels[SLICE_LABEL] = str(model.slice_index)
        labels[SERVING_ROLE_LABEL] = model.serving_role
        labels[ROUTER_ROLE_LABEL] = model.serving_role
    spec: dict[str, Any] = {
        "schedulerName": VOLCANO_SCHEDULER_NAME,
        "priorityClassName": cfg.priority_class,
        # A Service whose name upper-cases to VLLM would inject VLLM_PORT and crash vLLM.
        "enableServiceLinks": False,
        "securityContext": {"seccompProfile": {"type": cfg.seccomp_profile}},
        "containers": [container(model, role)],
        "volumes": _volumes(model),
    }
    daemon = network_daemon(model)
    sidecars = [daemon] if daemon is not None else []
    if model.serving_role == "decode" and role != "worker":
        sidecars.append(routing_sidecar(model, model.api_port))
    if sidecars:
        spec["initContainers"] = sidecars
    pull_secrets = list(cfg.image_pull_secrets)
    if model.serving_role == "decode" and model.sidecar_pull_secret not in (None, *pull_secrets):
        pull_secrets.append(str(model.sidecar_pull_secret))
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in pull_secrets]
    if model.node_selector:
        spec["nodeSelector"] = dict(model.node_selector)
    if model.node_affinity_terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in term.items()]}
                        for term in model.node_affinity_terms
                    ]
                }
            }
        }
    if model.tolerations:
        spec["tolerations"] = [dict(t) for t in model.tolerations]
    if model.spread is not None and role in ("server", "leader"):
        spec["topologySpreadConstraints"] = [spread_constraint(model, role)]
    return {"metadata": {"labels": labels, "annotations": pod_annotations(model)}, "spec": spec}


def spread_constraint(model: ModelSpec, role: Role) -> dict[str, Any]:
    """The replicas of the model (a multi-node model's leaders: one per group, LWS labels each
    leader worker 0) at most one apart between the domains of the spread's label, counted over
    the nodes its selector and affinity allow (Kubernetes' `podtopologyspread`, which Volcano's
    predicates and nodeorder plugins run)."""
    assert model.spread is not None
    key, required = model.spread
    selector = model_selector(model.name)
    if role == "leader":
        selector[LWS_WORKER_INDEX_LABEL] = "0"
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if required else "ScheduleAnyway",
        "labelSelector": {"matchLabels": selector},
    }
