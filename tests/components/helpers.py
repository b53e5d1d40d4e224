"""Helpers shared by the component tests: the example clusters and the pieces of rendered objects
they read."""

from __future__ import annotations

import shlex
from typing import Any

from offline.render import StackRender
from tests.conftest import mutate, stack_raw

SEED = stack_raw("aicloud-a")
GPU = "mars-tech.com/gpu"
LWS_MODEL, DEPLOY_MODEL = "qwen2-72b-tenanta", "qwen8b-preemptor"
"""The example cluster's multi-node and single-node models."""


def namespace_objects(result: Any) -> dict[str, dict[str, Any]]:
    """Kind -> manifest of the example cluster's objects in tenant namespace `a01`."""
    return {o.kind: o.manifest for o in result.rendered.objects if o.namespace == "a01"}


def objects_of_kind(render: StackRender, kind: str) -> dict[str, dict[str, Any]]:
    """Name -> manifest of every rendered object of one kind."""
    return {o.name: o.manifest for o in render.rendered.objects if o.kind == kind}


def container_of(template: dict[str, Any]) -> dict[str, Any]:
    (container,) = template["spec"]["containers"]
    return container


def vllm_argv(container: dict[str, Any]) -> list[str]:
    """The vLLM command line of a server container or a leader's script."""
    if container["command"][:2] == ["/bin/sh", "-c"]:
        line = next(line for line in container["args"][0].splitlines() if line.startswith("exec vllm"))
        return shlex.split(line)[1:]
    return container["command"] + container["args"]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


STACK = "aicloud-b"
"""The example cluster with metrics, alerts, a dashboard and autoscaling."""


def prometheus_rule(render: StackRender) -> dict[str, Any]:
    (rule,) = objects_of_kind(render, "PrometheusRule").values()
    return rule


def alerts_of(render: StackRender) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for group in prometheus_rule(render)["spec"]["groups"] for r in group["rules"]}


def with_volumes(volumes: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    """The example cluster with extra volumes on its single-node model (and cluster settings)."""
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(volumes=volumes))
    raw["cluster"].update(cluster)
    return raw
