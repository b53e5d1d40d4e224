"""The policy pack: every rule fails on a crafted violating object and passes on the example stacks.
Rules are called through their `validate` functions, as the Pulumi engine would call them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from offline.policy_runner import run_policies
from policy import scheduling, workloads
from policy.pack import POLICIES
from tests.conftest import STACKS

OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def _type(props: dict[str, Any]) -> str:
    group_version = props.get("apiVersion", "v1")
    token = group_version if "/" in group_version else f"core/{group_version}"
    return f"kubernetes:{token}:{props.get('kind')}"


def resource_violations(policy: ResourceValidationPolicy, props: dict[str, Any]) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(_type(props), props, "urn:test", "test", OPTIONS, None)
    assert policy.validate is not None and not isinstance(policy.validate, list)
    policy.validate(args, lambda message, urn=None: found.append(message))
    return found


def stack_violations(policy: StackValidationPolicy, resources: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    items = [
        PolicyResource(_type(p), p, f"urn:{i}", f"r{i}", OPTIONS, None, None, [], {}) for i, p in enumerate(resources)
    ]
    assert policy.validate is not None
    policy.validate(StackValidationArgs(items), lambda message, urn=None: found.append(message))
    return found


def gpu_deployment(**pod: Any) -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.33.0",
        "resources": {
            "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
        },
    }
    template = {
        "metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "team-a"}},
        "spec": {"schedulerName": "volcano", "priorityClassName": "p2-normal", "containers": [container]},
    }
    for key, value in pod.items():
        template["spec"][key] = value
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "m", "namespace": "team-a"},
        "spec": {"template": template},
    }


def _edit(manifest: dict[str, Any], change: Any) -> dict[str, Any]:
    copied = copy.deepcopy(manifest)
    change(copied)
    return copied


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]["template"]["spec"]["containers"][0]


def test_gpu_pods_use_volcano() -> None:
    policy = workloads.gpu_pods_use_volcano
    assert resource_violations(policy, gpu_deployment()) == []
    assert "schedulerName: volcano" in resource_violations(policy, gpu_deployment(schedulerName="default-scheduler"))[0]
    no_queue = _edit(gpu_deployment(), lambda m: m["spec"]["template"]["metadata"].pop("annotations"))
    assert "queue-name" in resource_violations(policy, no_queue)[0]
    no_class = _edit(gpu_deployment(), lambda m: m["spec"]["template"]["spec"].pop("priorityClassName"))
    assert "priorityClassName" in resource_violations(policy, no_class)[0]
    cpu_only = _edit(
        gpu_deployment(schedulerName="default-scheduler"),
        lambda m: [r.pop("nvidia.com/gpu") for r in _container(m)["resources"].values()],
    )
    assert resource_violations(policy, cpu_only) == []


def test_gpu_requests_equal_limits() -> None:
    policy = workloads.gpu_requests_equal_limits
    assert resource_violations(policy, gpu_deployment()) == []
    limits_only = _edit(gpu_deployment(), lambda m: _container(m)["resources"]["requests"].pop("nvidia.com/gpu"))
    assert "`nvidia.com/gpu` has no request" in resource_violations(policy, limits_only)[0]
    unequal = _edit(gpu_deployment(), lambda m: _container(m)["resources"]["limits"].update(memory="32Gi"))
    assert "request 16Gi != limit 32Gi" in resource_violations(policy, unequal)[0]
    rdma = _edit(gpu_deployment(), lambda m: _container(m)["resources"]["requests"].update({"rdma/hca": "1"}))
    assert "`rdma/hca` has no limit" in resource_violations(policy, rdma)[0]
    same_amount = _edit(gpu_deployment(), lambda m: _container(m)["resources"]["limits"].update(cpu="4000m"))
    assert resource_violations(policy, same_amount) == []


def test_pinned_images() -> None:
    policy = workloads.pinned_images
    assert resource_violations(policy, gpu_deployment()) == []
    for image in ("vllm/vllm-openai", "vllm/vllm-openai:latest", "registry:5000/vllm"):
        bad = _edit(gpu_deployment(), lambda m, i=image: _container(m).update(image=i))
        assert resource_violations(policy, bad), image
    digest = _edit(gpu_deployment(), lambda m: _container(m).update(image="vllm/vllm-openai@sha256:abc"))
    assert resource_violations(policy, digest) == []


def test_no_privileged_containers() -> None:
    policy = workloads.no_privileged_containers
    assert resource_violations(policy, gpu_deployment()) == []
    privileged = _edit(gpu_deployment(), lambda m: _container(m).update(securityContext={"privileged": True}))
    assert "privileged" in resource_violations(policy, privileged)[0]


def test_seccomp_unconfined_only_where_allowed() -> None:
    policy = workloads.seccomp_unconfined_allowed_only
    assert policy.enforcement_level == EnforcementLevel.ADVISORY
    unconfined = gpu_deployment(securityContext={"seccompProfile": {"type": "Unconfined"}})
    assert "Unconfined" in resource_violations(policy, unconfined)[0]
    allowed = _edit(
        unconfined, lambda m: m["metadata"].update(annotations={"volcano-platform.io/allow-unconfined-seccomp": "true"})
    )
    assert resource_violations(policy, allowed) == []
    assert (
        resource_violations(policy, gpu_deployment(securityContext={"seccompProfile": {"type": "RuntimeDefault"}}))
        == []
    )


def queue(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": spec}


def test_queue_quotas_follow_admission_rules() -> None:
    policy = scheduling.queue_quotas
    good = queue(
        weight=1,
        capability={"nvidia.com/gpu": "8"},
        deserved={"nvidia.com/gpu": "4"},
        guarantee={"resource": {"nvidia.com/gpu": "2"}},
    )
    assert resource_violations(policy, good) == []
    assert resource_violations(policy, queue(weight=0))
    assert "no deserved share" in resource_violations(policy, queue(guarantee={"resource": {"cpu": "1"}}))[0]
    assert (
        "exceeds deserved"
        in resource_violations(policy, queue(deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}}))[0]
    )
    assert "exceeds capability" in resource_violations(policy, queue(capability={"cpu": "1"}, deserved={"cpu": "2"}))[0]


def test_single_global_default_priority_class() -> None:
    policy = scheduling.single_global_default

    def priority_class(name: str, default: bool) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": 1,
            "globalDefault": default,
        }

    assert stack_violations(policy, [priority_class("a", True), priority_class("b", False)]) == []
    assert "2 PriorityClasses" in stack_violations(policy, [priority_class("a", True), priority_class("b", True)])[0]


def lws(pod_annotations: dict[str, str], metadata_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template = {"metadata": {"annotations": pod_annotations}, "spec": {"containers": []}}
    metadata: dict[str, Any] = {"name": "big", "namespace": "a"}
    if metadata_annotations:
        metadata["annotations"] = metadata_annotations
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": metadata,
        "spec": {"leaderWorkerTemplate": {"leaderTemplate": template, "workerTemplate": template}},
    }


def pod_group(name: str, topology: dict[str, Any] | None) -> dict[str, Any]:
    subgroup: dict[str, Any] = {"name": "g", "subGroupSize": 2}
    if topology:
        subgroup["networkTopology"] = topology
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "a"},
        "spec": {"minMember": 2, "subGroupPolicy": [subgroup]},
    }


HYPERNODE = {
    "apiVersion": "topology.volcano.sh/v1alpha1",
    "kind": "HyperNode",
    "metadata": {"name": "leaf"},
    "spec": {"tier": 1},
}


def test_multi_node_workloads_are_gang_scheduled() -> None:
    policy = scheduling.multi_node_gang_scheduled
    grouped = lws({"scheduling.k8s.io/group-name": "big"})
    assert stack_violations(policy, [grouped, pod_group("big", None)]) == []
    assert "not part of the stack" in stack_violations(policy, [grouped])[0]
    assert "belong to no PodGroup" in stack_violations(policy, [lws({})])[0]
    lws_gang = lws({}, {"scheduling.volcano.sh/queue-name": "q"})
    assert stack_violations(policy, [lws_gang]) == []


def test_multi_node_workloads_are_topology_constrained_on_a_topology_cluster() -> None:
    policy = scheduling.multi_node_topology
    assert policy.enforcement_level == EnforcementLevel.ADVISORY
    grouped = lws({"scheduling.k8s.io/group-name": "big"})
    unconstrained = [grouped, pod_group("big", None)]
    assert stack_violations(policy, unconstrained) == []  # no topology in this cluster
    assert "sets no networkTopology" in stack_violations(policy, [*unconstrained, HYPERNODE])[0]
    assert stack_violations(policy, [grouped, pod_group("big", {"mode": "soft"}), HYPERNODE]) == []
    discovery = {
        "chart": "volcano",
        "values": {"custom": {"controller_config_override": {"networkTopologyDiscovery": [{"source": "label"}]}}},
    }
    resources = [
        PolicyResource("kubernetes:helm.sh/v3:Release", discovery, "urn:r", "volcano", OPTIONS, None, None, [], {})
    ]
    assert scheduling.cluster_has_topology(StackValidationArgs(resources))


@pytest.mark.parametrize("stack", STACKS)
def test_every_rule_passes_on_the_example_stacks(stack: str, committed_render: Any) -> None:
    assert run_policies(committed_render(stack).rendered) == []


def test_the_pack_lists_every_rule() -> None:
    names = {p.name for p in POLICIES}
    assert names == {
        "gpu-pods-use-volcano",
        "gpu-requests-equal-limits",
        "pinned-images",
        "no-privileged-containers",
        "seccomp-unconfined-explicit",
        "queue-quotas",
        "single-global-default-priority",
        "multi-node-gang-scheduled",
        "multi-node-topology",
    }


def test_offline_runner_reports_violations_by_file(committed_render: Any) -> None:
    rendered = copy.deepcopy(committed_render("dev").rendered)
    deployment = next(o for o in rendered.objects if o.kind == "Deployment")
    deployment.manifest["spec"]["template"]["spec"]["schedulerName"] = "default-scheduler"
    violations = run_policies(rendered)
    assert [(v.policy, v.subject, v.level) for v in violations] == [
        ("gpu-pods-use-volcano", deployment.file, "mandatory")
    ]
