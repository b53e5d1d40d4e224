"""Tenant namespaces and queues: manifests, admission rules, hierarchy, the default queue."""

from __future__ import annotations

from typing import Any

import pytest

from offline.schemas import validate_objects
from tests.conftest import load, mutate, problems_of, stack_raw, under_parent_org

SEED = stack_raw("aicloud-a")
GPU = "mars-tech.com/gpu"


def _queue(**queue: Any) -> Any:
    return lambda raw: raw["tenants"]["tenantb"]["queue"].update(queue)


def _problem(raw: dict[str, Any], path: str) -> str:
    problems = [p for p in problems_of(raw) if p.path == path]
    assert problems, f"no problem at {path}"
    return str(problems[0])


def test_queues_render_with_quotas_and_wait_for_open(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    queue = result.rendered.find("Queue", "tenanta").manifest
    assert queue["metadata"]["annotations"] == {
        "pulumi.com/waitFor": "jsonpath={.status.state}=Open",
        "pulumi.com/patchForce": "true",  # Volcano's queue controller co-owns `spec.parent`
    }
    assert queue["metadata"]["labels"]["volcano-platform.io/tenant"] == "tenanta"
    assert queue["spec"] == {
        "weight": 2,
        "reclaimable": False,
        "priority": 0,
        "dequeueStrategy": "traverse",
        "capability": {GPU: "768"},
        "deserved": {GPU: "512"},
        "guarantee": {"resource": {GPU: "128"}},
    }
    assert result.rendered.find("Queue", "tenantb").manifest["spec"]["reclaimable"] is True
    namespace = result.rendered.find("Namespace", "a01").manifest
    assert namespace["metadata"]["labels"]["volcano-platform.io/tenant"] == "tenanta"


def test_queues_depend_on_volcano_and_their_parent(render_raw: Any) -> None:
    result = render_raw(under_parent_org(SEED))
    index = {e["urn"].split("::")[-1]: e for e in result.rendered.index}
    tenanta = index["tenants-queue-tenanta"]["dependsOn"]
    assert any(d.endswith("::volcano-release") for d in tenanta)
    assert any(d.endswith("::tenants-queue-org") for d in tenanta)
    assert index["tenants-queue-tenanta"]["deleteBeforeReplace"] is True
    assert result.rendered.find("Queue", "tenanta").manifest["spec"]["parent"] == "org"
    assert "parent" not in result.rendered.find("Queue", "org").manifest["spec"]


def test_queues_validate_against_the_upstream_crd(render_raw: Any) -> None:
    queues = [o for o in render_raw(under_parent_org(SEED)).rendered.objects if o.kind == "Queue"]
    report = validate_objects(queues, "1.33")
    assert report.checked == len(queues) == 4 and report.issues == []


def test_default_queue_is_patched_not_created(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    patch = next(o for o in result.rendered.objects if o.patch and o.kind == "Queue")
    assert patch.name == "default" and patch.manifest["spec"] == {"capability": {GPU: "0"}}
    assert patch.type == "kubernetes:scheduling.volcano.sh/v1beta1:QueuePatch"
    assert not [o for o in result.rendered.by_kind("Queue") if o.name == "default"]


def test_guarantee_within_deserved_within_capability() -> None:
    message = _problem(mutate(SEED, _queue(guarantee={GPU: 300})), f"tenants.tenantb.queue.guarantee[{GPU}]")
    assert "guarantee 300 exceeds deserved 256" in message
    message = _problem(mutate(SEED, _queue(deserved={GPU: 2000})), f"tenants.tenantb.queue.deserved[{GPU}]")
    assert "deserved 2000 exceeds capability 1024" in message


def test_guaranteed_resources_need_a_deserved_share() -> None:
    message = _problem(mutate(SEED, _queue(guarantee={"cpu": 10})), "tenants.tenantb.queue.guarantee.cpu")
    assert "no deserved share" in message and "deserved" in message


def test_depth_is_at_most_five() -> None:
    raw = mutate(
        SEED,
        lambda r: r["tenants"].update(
            {f"l{i}": {"namespaces": [], "queue": {"parent": f"l{i - 1}"} if i > 1 else {}} for i in range(1, 6)}
        ),
    )
    raw["tenants"]["tenantb"]["queue"]["parent"] = "l5"
    assert "6 levels below `root`" in _problem(raw, "tenants.tenantb.queue.parent")


def test_children_stay_within_their_parent() -> None:
    raw = under_parent_org(SEED, capability={GPU: 512}, deserved={GPU: 512})
    assert "exceeds the parent queue `org`" in _problem(raw, f"tenants.tenantb.queue.capability[{GPU}]")
    assert "child queues' deserved total 768 exceeds the parent's 512" in _problem(
        raw, f"tenants.org.queue.deserved[{GPU}]"
    )
    unset = under_parent_org(SEED)
    del unset["tenants"]["org"]["queue"]["guarantee"]
    assert "but the parent has none" in _problem(unset, f"tenants.org.queue.guarantee[{GPU}]")


def test_queue_parents_must_form_a_tree() -> None:
    raw = mutate(SEED, lambda r: r["tenants"]["tenanta"]["queue"].update(parent="tenantb"))
    raw["tenants"]["tenantb"]["queue"]["parent"] = "tenanta"
    assert "cycle" in _problem(raw, "tenants.tenanta.queue.parent")


def test_guarantees_cannot_exceed_the_gpu_inventory() -> None:
    raw = mutate(SEED, _queue(guarantee={GPU: 1000}, deserved={GPU: 1000}))
    message = _problem(raw, f"tenants.tenantb.queue.guarantee[{GPU}]")  # the largest share
    assert "adds up to 1128 (tenanta 128, tenantb 1000), but the topology has 1024 GPUs" in message


def test_models_run_only_in_leaf_queues_when_hierarchical() -> None:
    raw = under_parent_org(SEED)
    raw["tenants"]["org"]["namespaces"] = ["org"]
    raw["models"]["qwen8b-preemptor"]["tenant"] = "org"
    assert "only leaf queues get resources" in _problem(raw, "models.qwen8b-preemptor.tenant")


@pytest.mark.parametrize("namespace", ["kube-system", "volcano-system", "default"])
def test_system_namespaces_are_not_tenant_namespaces(namespace: str) -> None:
    raw = mutate(SEED, lambda r: r["tenants"]["tenantb"].update(namespaces=[namespace]))
    assert "belongs to the cluster or the platform itself" in _problem(raw, "tenants.tenantb.namespaces[0]")


def test_tenant_defaults() -> None:
    spec = load(mutate(SEED, lambda r: r["tenants"].update({"team-c": {}})))
    tenant = spec.tenants["team-c"]
    assert tenant.namespaces == ("team-c",) and tenant.queue_name == "team-c" and tenant.depth == 1
