"""The tenant boundary proven on rendered objects: whatever key produced a value, an object of a
tenant file's tenant that uses what the tenant is not granted is refused, naming the tenant file
and the key that wrote the value. These tests change rendered objects directly, as a key added
later (with no check of its own) would, and show the pass catches each; the last shows that a
program whose render crosses the boundary registers no Kubernetes object at all."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

import components.inference.pod_template as pod_template
from config.checks.tenancy.pod_specs import multus_networks
from config.checks.tenancy.rendered import check_rendered_boundary
from config.errors import Problem
from config.stack_file.reader import read_stack
from offline.engine import run_program
from offline.render import StackRender
from tests.conftest import PROJECT_DIR

CHAT = "clusters/aicloud-b/tenants/chat.yaml"
SEARCH = "clusters/aicloud-b/tenants/search.yaml"
Change = Callable[[dict[str, Any]], None]


def _objects(render: StackRender) -> list[dict[str, Any]]:
    return [copy.deepcopy(o.manifest) for o in render.rendered.objects]


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _pod(obj)["containers"][0]
    return container


CHANGES: list[tuple[str, str, str, Change, str]] = [
    # (what, kind, name, change, the text the refusal carries)
    (
        "a Secret of another team read",
        "Deployment",
        "qwen3-8b",
        lambda o: (
            _container(o)
            .setdefault("env", [])
            .append({"name": "X", "valueFrom": {"secretKeyRef": {"name": "search-hf-token", "key": "value"}}})
        ),
        "reads the Secret `search-hf-token`",
    ),
    (
        "a Secret volume",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).setdefault("volumes", []).append({"name": "s", "secret": {"secretName": "search-hf-token"}}),
        "reads the Secret `search-hf-token`",
    ),
    (
        "a projected Secret",
        "Deployment",
        "qwen3-8b",
        lambda o: (
            _pod(o)
            .setdefault("volumes", [])
            .append({"name": "p", "projected": {"sources": [{"secret": {"name": "search-hf-token"}}]}})
        ),
        "reads the Secret `search-hf-token`",
    ),
    (
        "envFrom a Secret",
        "Deployment",
        "qwen3-8b",
        lambda o: _container(o).setdefault("envFrom", []).append({"secretRef": {"name": "search-hf-token"}}),
        "reads the Secret `search-hf-token`",
    ),
    (
        "a host path",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).setdefault("volumes", []).append({"name": "h", "hostPath": {"path": "/"}}),
        "mounts the node's `/`",
    ),
    (
        "an NFS export",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).setdefault("volumes", []).append({"name": "n", "nfs": {"server": "nfs.x", "path": "/e"}}),
        "mounts the NFS export `nfs.x:/e`",
    ),
    (
        "a CSI volume",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).setdefault("volumes", []).append({"name": "c", "csi": {"driver": "x"}}),
        "mounts a `csi` volume",
    ),
    (
        "a queue label",
        "Deployment",
        "qwen3-8b",
        lambda o: o["spec"]["template"]["metadata"]["labels"].update({"volcano.sh/queue-name": "search"}),
        "`volcano.sh/queue-name: search`",
    ),
    (
        "a queue annotation of another tenant",
        "Deployment",
        "qwen3-8b",
        lambda o: o["spec"]["template"]["metadata"]["annotations"].update(
            {"scheduling.volcano.sh/queue-name": "search"}
        ),
        "queue `search`, which is not tenant `chat`'s",
    ),
    (
        "node devices through GKE's injector",
        "Deployment",
        "qwen3-8b",
        lambda o: o["spec"]["template"]["metadata"]["annotations"].update(
            {"devices.gke.io/container.vllm": "- path: /dev/nvidia0\n"}
        ),
        "GKE hands the pod node devices or networks",
    ),
    (
        "another team's VPC through GKE's multi-networking",
        "Deployment",
        "qwen3-8b",
        lambda o: o["spec"]["template"]["metadata"]["annotations"].update(
            {"networking.gke.io/interfaces": '[{"interfaceName":"eth1","network":"search-vpc"}]'}
        ),
        "GKE hands the pod node devices or networks",
    ),
    (
        "a service account of its own making",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).update(serviceAccountName="admin"),
        "service account `admin`",
    ),
    (
        "the node's network",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).update(hostNetwork=True),
        "shares the node's Network namespace",
    ),
    (
        "a privileged container",
        "Deployment",
        "qwen3-8b",
        lambda o: _container(o).setdefault("securityContext", {}).update(privileged=True),
        "runs a privileged container",
    ),
    (
        "a capability beyond baseline",
        "Deployment",
        "qwen3-8b",
        lambda o: _container(o).setdefault("securityContext", {}).update(capabilities={"add": ["NET_ADMIN"]}),
        "adds the capability NET_ADMIN",
    ),
    (
        "a host port",
        "Deployment",
        "qwen3-8b",
        lambda o: _container(o)["ports"][0].update(hostPort=80),
        "binds the node's port 80",
    ),
    (
        "every taint tolerated",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).setdefault("tolerations", []).append({"operator": "Exists"}),
        "tolerates every taint",
    ),
    (
        "GPUs outside Volcano",
        "Deployment",
        "qwen3-8b",
        lambda o: _pod(o).update(schedulerName="default-scheduler"),
        "outside Volcano",
    ),
    (
        "a device in no quota",
        "Deployment",
        "qwen3-8b",
        lambda o: _container(o)["resources"]["limits"].update({"rdma/hca": "4"}),
        "a device in no quota",
    ),
    (
        "another namespace's network",
        "Deployment",
        "qwen3-8b",
        lambda o: o["spec"]["template"]["metadata"]["annotations"].update(
            {"k8s.v1.cni.cncf.io/networks": "search/rdma@net1"}
        ),
        "attaches the network `search/rdma`",
    ),
    (
        "a class above its grant",
        "Deployment",
        "bge-reranker",
        lambda o: _pod(o).update(priorityClassName="p0-critical"),
        "priority class `p0-critical`",
    ),
    (
        "a load balancer",
        "Service",
        "qwen3-8b",
        lambda o: o["spec"].update(type="LoadBalancer"),
        "exposed outside the cluster",
    ),
    (
        "a binding to a ClusterRole",
        "RoleBinding",
        "qwen3-8b-epp",
        lambda o: o["roleRef"].update(kind="ClusterRole", name="cluster-admin"),
        "binds something other than a Role",
    ),
    (
        "a namespace at another level",
        "Namespace",
        "chat",
        lambda o: o["metadata"]["labels"].update({"pod-security.kubernetes.io/enforce": "privileged"}),
        "granted level, `baseline`",
    ),
    (
        "a queue past its ceiling",
        "Queue",
        "chat",
        lambda o: o["spec"].update(capability={"nvidia.com/gpu": "100000"}),
        "over tenant `chat`'s ceiling",
    ),
    (
        "a PodGroup in another tenant's queue",
        "PodGroup",
        "llama-70b",
        lambda o: o["spec"].update(queue="search"),
        "is in queue `search`",
    ),
    (
        "a route on a hostname it does not serve",
        "HTTPRoute",
        "qwen3-32b-batch-search",
        lambda o: o["spec"]["hostnames"].append("chat.llm.aicloud-b.example"),
        "answers on `chat.llm.aicloud-b.example`",
    ),
]


@pytest.mark.parametrize(("what", "kind", "name", "change", "said"), CHANGES, ids=[c[0] for c in CHANGES])
def test_the_pass_catches_what_no_key_check_looks_at(
    what: str,
    kind: str,
    name: str,
    change: Change,
    said: str,
    committed_render: Callable[[str], StackRender],
) -> None:
    render = committed_render("aicloud-b")
    objects = _objects(render)
    assert not check_rendered_boundary(render.spec, objects), "the example renders within its grants"
    target = _find(objects, kind, name)
    change(target)
    problems = check_rendered_boundary(render.spec, objects)
    assert problems, what
    assert all(p.file in (CHAT, SEARCH) for p in problems), problems
    assert any(said in p.message for p in problems), [p.message for p in problems]


def test_a_refusal_names_the_key_that_wrote_the_value(committed_render: Callable[[str], StackRender]) -> None:
    render = committed_render("aicloud-b")
    objects = _objects(render)
    _pod(_find(objects, "Deployment", "qwen3-8b"))["priorityClassName"] = "p9"
    (problem,) = [p for p in check_rendered_boundary(render.spec, objects) if "p9" in p.message]
    assert (problem.file, problem.path) == (CHAT, "models.qwen3-8b")  # no key spells `p9`: the model's entry
    objects = _objects(render)
    _pod(_find(objects, "Deployment", "bge-reranker"))["priorityClassName"] = "p0-critical"
    found = [p for p in check_rendered_boundary(render.spec, objects) if "p0-critical" in p.message]
    assert found and found[0].file == SEARCH


def test_the_platforms_own_objects_are_not_bound(committed_render: Callable[[str], StackRender]) -> None:
    """The platform's files are where grants are written: a platform tenant is not bound."""
    render = committed_render("aicloud-a")
    objects = _objects(render)
    for obj in objects:
        for template in [obj["spec"]["template"]] if obj["kind"] == "Deployment" else []:
            template["spec"].setdefault("volumes", []).append({"name": "h", "hostPath": {"path": "/"}})
    assert not check_rendered_boundary(render.spec, objects)


def test_multus_annotations_in_both_forms() -> None:
    assert multus_networks('[{"name": "rdma", "namespace": "nad"}, {"name": "own"}]') == [
        ("nad", "rdma"),
        (None, "own"),
    ]
    assert multus_networks("nad/rdma@net1, own") == [("nad", "rdma"), (None, "own")]


def test_a_program_that_crosses_the_boundary_registers_no_kubernetes_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """A builder that produces what no key check saw (here every model pod mounting the node's
    root, as a key added later might): the run stops with the refusal at the tenant files, and the
    gate on the provider keeps every object back, so neither engine receives one."""
    original = pod_template.pod_template

    def with_host_root(*args: Any, **kwargs: Any) -> dict[str, Any]:
        template = original(*args, **kwargs)
        template["spec"].setdefault("volumes", []).append({"name": "root", "hostPath": {"path": "/"}})
        return template

    monkeypatch.setattr(pod_template, "pod_template", with_host_root)
    for module in ("components.inference.deployment", "components.inference.leaderworkerset"):
        monkeypatch.setattr(f"{module}.pod_template", with_host_root, raising=False)
    run = run_program(PROJECT_DIR, read_stack(PROJECT_DIR, "aicloud-b"))
    assert run.config_error is not None
    problems: tuple[Problem, ...] = run.config_error.problems
    assert {p.file for p in problems} == {CHAT, SEARCH}
    assert all("mounts the node's `/`" in p.message for p in problems)
    sent = [r.type for r in run.registrations if r.type.startswith("kubernetes:") and r.custom]
    assert sent == [], sent
