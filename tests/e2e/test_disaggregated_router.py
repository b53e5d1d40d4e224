"""Prefill and decode apart behind the gateway, for real: one router per slice (llm-d's endpoint
picker v0.7.1) with the prefill/decode profile the platform renders, and decode's routing sidecar
(`cmd/pd-sidecar` of the same module) in front of llm-d's vLLM simulators. All built from their Go
modules (`real-cluster/inference-router`, `inference-sim`); the objects they read come from the e2e
cluster's API server.

    extproc-client ──gRPC──> epp of slice k ──watch──> kube-apiserver <──watch── pd-sidecar
         │ decode pod, x-prefiller-host-port                                        │
         └───── POST /v1/completions ──> pd-sidecar (slice 0's decode) ──prefill──> simulator (prefill)
                                                    └──────────decode─────────────> simulator (decode)

The model has two slices of one prefill and one decode pod each. The test plays the pods' kubelet:
each stand-in pod carries the labels the rendered LeaderWorkerSet gives it and its own loopback
address. Every pod address answers on the model's port, where one simulator listens for all of
them (a process binds a port on every address), so the tests read where the router sends a request
from its answer, not from which process served it; the sidecar listens on a port of its own.

What the tests show:

1. Each slice's router picks decode in its slice and, for a long prompt, names a prefill pod of
   its slice; a short prompt is prefilled on decode. The control: the same router without the
   slice filter picks across slices, so the first test can fail.
2. A request through slice 0's decode sidecar, run as rendered, is prefilled on the prefill pod
   the router named (the prefill simulator counts a remote-decode prefill) and decoded behind it.
3. Why the platform leaves the sidecar's SSRF protection off: with it on and a v1 InferencePool,
   the pinned sidecar refuses even the pool's own prefill pod (it parses the pool's selector as a
   flat label map and lists no pod).
4. What bounds it: a client's own `x-prefiller-host-port` on a prompt the router prefills on
   decode passes the router untouched (it neither sets nor removes it), and the sidecar sends the
   prefill where the client said; the egress NetworkPolicy the platform renders for the slice's
   decode pods lets that reach the slice's own prefill pods only (asked of the NetworkPolicy
   engine, since nothing enforces policies on loopback).

Where the router (llm-d-inference-scheduler v0.7.1) decides: pkg/plugins/profile/
disagg_profile_handler.go (decode first, then the decider), prefix_based_pd_decider.go (prefill
apart when at least `nonCachedTokens` of the prompt, at 4 characters a token, are not cached on
the decode pod), pkg/plugins/pre-request/disagg_headers_handler.go (`x-prefiller-host-port`),
pkg/plugins/filter/by_label.go (the slice filter); the sidecar: pkg/sidecar/proxy/allowlist.go,
chat_completions.go.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.isolation.engine import evaluate
from offline.isolation.flows import truth_table
from offline.render import StackRender, render_stack
from sandbox.api import PREVIEW_TOKEN, PREVIEW_USER, WORKLOAD_TOKEN, WORKLOAD_USER, free_port
from sandbox.cluster import PROJECT, LocalCluster
from tests.conftest import stack_raw, write_stack
from tests.e2e.conftest import start_cluster
from tests.e2e.processes import Gateway, Processes, local_arguments, scrape, total
from tests.e2e.stacks import dev_nodes

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

NAMESPACE = "pd-router-e2e"
MODEL = "pd"
SERVED_MODEL = "Qwen/Qwen3-0.6B"
SLICES = ("0", "1")
ADDRESSES = {("0", "prefill"): "127.0.0.11", ("0", "decode"): "127.0.0.12"}
ADDRESSES |= {("1", "prefill"): "127.0.0.21", ("1", "decode"): "127.0.0.22"}
PREFILL_HEADER = "x-prefiller-host-port"
LONG_PROMPT_CHARACTERS = 400
"""About 100 tokens: above the default `nonCachedTokens` (16) when nothing of it is cached."""
REQUESTS = 10
"""Requests per router. Without the slice filter each request picks its decode and its prefill pod
among both slices', so no request paired across slices by chance is 2^-10."""


def pd_gateway_stack(port: int, vllm_port: int) -> dict[str, Any]:
    """The dev stack with a model in two slices (one prefill and one decode pod each, each slice in
    its spine) served through the gateway on `port`, decode's vLLM behind its sidecar on
    `vllm_port`."""
    raw = stack_raw("dev")
    raw["cluster"]["gpusPerNode"] = 8
    raw["topology"] = {
        "tiers": ["example.com/leaf", "example.com/spine"],
        "hyperNodes": "explicit",
        "domains": {
            f"spine-{s}": {"domains": {f"leaf-{s}": {"nodes": [f"dev-gpu-{2 * s - 1}", f"dev-gpu-{2 * s}"]}}}
            for s in (1, 2)
        },
    }
    raw["tenants"]["team-a"]["namespaces"] = [NAMESPACE]
    raw["tenants"]["team-a"]["queue"] = {"capability": {"nvidia.com/gpu": 32}}
    role = {"resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"}, "engine": {"tensorParallelSize": 8}}
    raw["models"] = {
        MODEL: {
            **raw["models"]["qwen3-0-6b"],
            "servedModelName": SERVED_MODEL,
            "resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"},
            "port": port,
            "replicas": len(SLICES),
            "topology": {"mode": "hard", "highestTier": 2},
            "roles": {"prefill": role, "decode": role},
            "disaggregation": {"sidecar": {"vllmPort": vllm_port}},
            "gateway": {"enabled": True},
        }
    }
    raw["gateway"] = {"className": "e2e", "domain": "llm.e2e.example"}
    return raw


@dataclass(frozen=True)
class Rendered:
    render: StackRender
    port: int

    def manifest(self, kind: str, name: str) -> dict[str, Any]:
        return self.render.rendered.find(kind, name, NAMESPACE).manifest

    def applied(self) -> list[dict[str, Any]]:
        """What the routers read: the pool, its objectives, their Role."""
        kinds = ("InferencePool", "InferenceObjective", "Role")
        objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
        return objects + [
            o.manifest for o in self.render.rendered.objects if o.kind in kinds and o.namespace == NAMESPACE
        ]

    def router_config(self, index: str) -> str:
        text: str = self.manifest("ConfigMap", f"{MODEL}-epp-s{index}")["data"]["config.yaml"]
        return text

    def router_arguments(self, index: str) -> list[str]:
        deployment = self.manifest("Deployment", f"{MODEL}-epp-s{index}")
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        arguments: list[str] = container["args"]
        return arguments

    def pod_labels(self, index: str, role: str) -> dict[str, str]:
        """The labels the LeaderWorkerSet's template gives its pods, and those the LWS controller
        adds to the first pod of group 0."""
        lws = self.manifest("LeaderWorkerSet", f"{MODEL}-s{index}-{role}")
        template = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        return {
            **template["metadata"]["labels"],
            "leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"],
            "leaderworkerset.sigs.k8s.io/group-index": "0",
            "leaderworkerset.sigs.k8s.io/worker-index": "0",
        }

    def sidecar_arguments(self, index: str) -> list[str]:
        lws = self.manifest("LeaderWorkerSet", f"{MODEL}-s{index}-decode")
        (sidecar,) = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["initContainers"]
        arguments: list[str] = sidecar["args"]
        return arguments


def bind(cluster: LocalCluster, role: str, user: str) -> None:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{role}-e2e", "namespace": NAMESPACE},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
    }
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(binding))


def stand_in_pod(index: str, role: str, labels: dict[str, str]) -> dict[str, Any]:
    """The first pod of the role's LWS (its group 0's leader), with the size annotation the LWS
    controller gives it (LWS's pod webhook requires it)."""
    metadata = {"name": f"{MODEL}-s{index}-{role}-0", "namespace": NAMESPACE, "labels": labels}
    metadata["annotations"] = {"leaderworkerset.sigs.k8s.io/size": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"schedulerName": "e2e-nobody", "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0"}]},
    }


def ready(cluster: LocalCluster, name: str, address: str) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [{"type": t, "status": "True", "lastTransitionTime": now} for t in ("PodScheduled", "Ready")]
    status = {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}], "conditions": conditions}
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/status"
    cluster.api().request("PATCH", path, {"status": status}, "application/merge-patch+json")


@dataclass
class Bench:
    rendered: Rendered
    routers: dict[str, Gateway]
    """Slice (or `control`) -> the ext-proc client in front of that router."""
    sidecar_port: int
    vllm_port: int
    protected_port: int
    """A second sidecar of slice 0's decode, with SSRF protection on (not as rendered)."""
    folder: Path

    def endpoint(self, index: str, role: str) -> str:
        return f"{ADDRESSES[(index, role)]}:{self.rendered.port}"

    def prefills(self) -> float:
        """Prefills the prefill simulator ran for a decode elsewhere."""
        page = scrape(self.rendered.port)
        return sum(
            v
            for labels, v in page.get("vllm:request_success_total", [])
            if labels.get("finish_reason") == "remote_decode"
        )

    def decodes(self) -> float:
        return total(scrape(self.vllm_port), "vllm:request_success_total")


def long_prompt(tag: str) -> str:
    return (f"{tag} " + "the slice keeps prefill and decode in one domain " * 20)[:LONG_PROMPT_CHARACTERS]


def request(rid: str, prompt: str, forward: bool = False, forward_to: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"id": rid, "model": SERVED_MODEL, "prompt": prompt, "max_tokens": 2, "forward": forward}
    if forward_to:
        out["forward_to"] = forward_to
    return out


def without_slice_filter(config: str) -> str:
    """The router's config with the slice filter out of its profiles (the control)."""
    document = yaml.safe_load(config)
    for profile in document["schedulingProfiles"]:
        profile["plugins"] = [p for p in profile["plugins"] if p["pluginRef"] != "this-slice"]
    document["plugins"] = [p for p in document["plugins"] if p.get("name") != "this-slice"]
    return yaml.safe_dump(document)


def start_simulator(processes: Processes, programs: dict[str, Path], name: str, port: int) -> None:
    processes.start(
        name,
        [
            str(programs["llm-d-inference-sim"]),
            f"--port={port}",
            f"--model={SERVED_MODEL}",
            "--force-dummy-tokenizer",
            "--mode=random",
            "--seed=1",
        ],
    )


def with_values(rendered: list[str], values: dict[str, str]) -> list[str]:
    """`--flag=value` arguments as rendered, those named in `values` given the local value."""
    out = [f"{flag}={values[flag]}" if (flag := a.partition("=")[0]) in values else a for a in rendered]
    assert set(values) <= {a.partition("=")[0] for a in rendered}, (values, rendered)
    return out


SSRF_PROTECTION = ["--enable-ssrf-protection=true", f"--inference-pool={NAMESPACE}/{MODEL}"]
"""The sidecar's check of prefill targets against the pool's pods (`pkg/sidecar/proxy/allowlist.go`)."""
ALLOWLIST_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "pd-sidecar-allowlist", "namespace": NAMESPACE},
    "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["inference.networking.k8s.io"],
            "resources": ["inferencepools"],
            "verbs": ["get", "list", "watch"],
        },
    ],
}
"""What the allowlist reads: the pool (by name) and the pods its selector would select."""
TRACING_OFF = {"OTEL_TRACES_SAMPLER_ARG": "0", "OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:1"}
"""llm-d's programs set up OpenTelemetry tracing whatever the flags say: sample nothing."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("pd-router-cluster"), real_programs, dev_nodes(count=1))


@pytest.fixture(scope="module")
def bench(cluster: LocalCluster, real_programs: dict[str, Path]) -> Iterator[Bench]:
    folder = cluster.folder / "pd-router"
    folder.mkdir()
    port, vllm_port, sidecar_port, protected_port = free_port(), free_port(), free_port(), free_port()
    path = write_stack(folder / "Pulumi.pd-router.yaml", pd_gateway_stack(port, vllm_port))
    rendered = Rendered(render_stack(PROJECT, "pd-router", path), port)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(rendered.applied()))
    bind(cluster, f"{MODEL}-epp", PREVIEW_USER)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(ALLOWLIST_ROLE))
    bind(cluster, ALLOWLIST_ROLE["metadata"]["name"], WORKLOAD_USER)
    for (index, role), address in ADDRESSES.items():
        pod = stand_in_pod(index, role, rendered.pod_labels(index, role))
        cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(pod))
        ready(cluster, pod["metadata"]["name"], address)
    router_kubeconfig, sidecar_kubeconfig = folder / "router.kubeconfig", folder / "sidecar.kubeconfig"
    router_kubeconfig.write_text(cluster.kubeconfig_text(PREVIEW_TOKEN))
    sidecar_kubeconfig.write_text(cluster.kubeconfig_text(WORKLOAD_TOKEN))
    processes = Processes(folder)
    start_simulator(processes, real_programs, "sim-prefill", port)
    start_simulator(processes, real_programs, "sim-decode", vllm_port)
    sidecar = with_values(rendered.sidecar_arguments("0"), {"--port": str(sidecar_port)})
    processes.start("pd-sidecar", [str(real_programs["pd-sidecar"]), *sidecar], TRACING_OFF)
    protected = [*with_values(sidecar, {"--port": str(protected_port)}), *SSRF_PROTECTION]
    processes.start(
        "pd-sidecar-ssrf-protection",
        [str(real_programs["pd-sidecar"]), *protected],
        {"KUBECONFIG": str(sidecar_kubeconfig), **TRACING_OFF},
    )
    configs = {index: rendered.router_config(index) for index in SLICES}
    configs["control"] = without_slice_filter(configs["0"])
    routers: dict[str, Gateway] = {}
    try:
        for name, config in configs.items():
            config_file = folder / f"config-{name}.yaml"
            config_file.write_text(config)
            grpc_port, health_port, metrics_port = free_port(), free_port(), free_port()
            arguments = local_arguments(
                rendered.router_arguments("0" if name == "control" else name),
                {"--config-file": str(config_file), "--grpc-port": str(grpc_port),
                 "--grpc-health-port": str(health_port), "--metrics-port": str(metrics_port)},
            )  # fmt: skip
            processes.start(
                f"epp-{name}",
                [
                    str(real_programs["epp"]),
                    *arguments,
                    "--enable-pprof=false",
                    "--refresh-prometheus-metrics-interval=200ms",
                ],
                {"KUBECONFIG": str(router_kubeconfig), **TRACING_OFF},
            )
            routers[name] = Gateway(
                real_programs["extproc-client"], grpc_port, health_port, folder / f"client-{name}.log", arguments
            )
        for gateway in routers.values():
            gateway.wait_ready(90)
        made = Bench(rendered, routers, sidecar_port, vllm_port, protected_port, folder)
        cluster.wait_for(lambda: _answers(made.sidecar_port), 60, "the sidecar to serve")
        cluster.wait_for(lambda: _answers(made.protected_port), 60, "the protected sidecar to serve")
        yield made
    finally:
        for gateway in routers.values():
            gateway.close()
        processes.stop()


def post_to_sidecar(port: int, prefill: str) -> int:
    body = json.dumps({"model": SERVED_MODEL, "prompt": long_prompt("direct"), "max_tokens": 2}).encode()
    post = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions",
        data=body,
        headers={"Content-Type": "application/json", PREFILL_HEADER: prefill},
    )
    try:
        with urllib.request.urlopen(post, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def _answers(port: int) -> bool:
    """The sidecar serves (it answers its health path itself)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            return int(response.status) == 200
    except OSError:
        return False


def answers(gateway: Gateway, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    gateway.send(*requests)
    answered = gateway.wait("answered", [r["id"] for r in requests], 60)
    return [answered[r["id"]] for r in requests]


def test_each_slice_router_pairs_prefill_and_decode_in_its_slice(bench: Bench) -> None:
    for index in SLICES:
        got = answers(
            bench.routers[index], [request(f"s{index}-long-{i}", long_prompt(f"{index}-{i}")) for i in range(REQUESTS)]
        )
        assert {a.get("endpoint") for a in got} == {bench.endpoint(index, "decode")}, got
        assert {a["headers"].get(PREFILL_HEADER) for a in got} == {bench.endpoint(index, "prefill")}, got
        short = answers(bench.routers[index], [request(f"s{index}-short", "hi")])[0]
        assert short.get("endpoint") == bench.endpoint(index, "decode"), short
        assert PREFILL_HEADER not in short["headers"], short


def test_without_the_slice_filter_the_router_pairs_across_slices(bench: Bench) -> None:
    """The control: the same router without the slice filter pairs a decode pod of one slice with
    a prefill pod of the other."""
    got = answers(bench.routers["control"], [request(f"control-{i}", long_prompt(f"c-{i}")) for i in range(REQUESTS)])
    slice_of = {bench.endpoint(s, role): s for s in SLICES for role in ("prefill", "decode")}
    pairs = [(slice_of[a["endpoint"]], slice_of[a["headers"][PREFILL_HEADER]]) for a in got]
    assert any(decode != prefill for decode, prefill in pairs), pairs


def test_a_request_through_decode_sidecar_is_prefilled_on_the_named_prefill_pod(bench: Bench) -> None:
    prefills, decodes = bench.prefills(), bench.decodes()
    sidecar = f"127.0.0.1:{bench.sidecar_port}"
    got = answers(bench.routers["0"], [request("through", long_prompt("through"), forward=True, forward_to=sidecar)])[0]
    assert got["headers"].get(PREFILL_HEADER) == bench.endpoint("0", "prefill"), got
    forwarded = bench.routers["0"].wait("forwarded", ["through"], 60)["through"]
    assert forwarded.get("forward_status") == 200, forwarded
    assert bench.prefills() == prefills + 1
    assert bench.decodes() == decodes + 1


def test_with_ssrf_protection_the_pinned_sidecar_refuses_the_pools_own_prefill_pod(bench: Bench) -> None:
    """Why the platform leaves the protection off: the allowlist of v0.7.1 stays empty with a v1
    InferencePool, although the sidecar may read the pool and its pods (the test's Role)."""
    assert post_to_sidecar(bench.protected_port, bench.endpoint("0", "prefill")) == 403
    log = (bench.folder / "pd-sidecar-ssrf-protection.log").read_text(errors="replace")
    assert "unable to parse requirement" in log and "matchLabels" in log, log[-3000:]


def test_a_clients_own_prefill_target_passes_the_router_and_the_egress_policy_bounds_it(bench: Bench) -> None:
    """A short prompt (prefilled on decode) with the client's own `x-prefiller-host-port`: the
    router leaves the header as it came (it never removes a header), and the sidecar prefills where
    it names: here, on loopback where nothing enforces NetworkPolicies, the prefill simulator under
    an address of no pod. On a cluster the rendered egress policy of the slice's decode pods is what
    bounds it, and the NetworkPolicy engine (cyclonus, `tenant-isolation`) says where it lets the
    sidecar's prefill go: the slice's own prefill pods, and nothing the client can name besides."""
    prefills = bench.prefills()
    target = f"127.0.0.1:{bench.rendered.port}"
    sent = request("client-target", "hi", forward=True, forward_to=f"127.0.0.1:{bench.sidecar_port}")
    sent["headers"] = {PREFILL_HEADER: target}
    got = answers(bench.routers["0"], [sent])[0]
    assert PREFILL_HEADER not in got["headers"] and PREFILL_HEADER not in got.get("removed", []), got
    forwarded = bench.routers["0"].wait("forwarded", ["client-target"], 60)["client-target"]
    assert forwarded.get("forward_status") == 200, forwarded
    assert bench.prefills() == prefills + 1

    render = bench.rendered.render
    table = truth_table(render.spec, [o.manifest for o in render.rendered.objects])
    decode = next(p for p in table.pods if p.name.startswith(f"LeaderWorkerSet/{NAMESPACE}/{MODEL}-s0-decode"))
    for address in ("127.0.0.1", "10.96.0.1", "169.254.169.254", "192.168.1.10"):
        table.add(f"client's target {address}", decode, {"ip": address}, bench.rendered.port, False)
    answered = evaluate(table.namespaces, table.policies, [f.question() for f in table.flows])
    wrong = [f.name for f in table.flows if answered.flows[f.name]["allowed"] != f.allowed]
    assert not wrong, wrong
    reached = sorted(f.name for f in table.flows if f.source["labels"] == decode.labels and f.allowed)
    assert any(f"{MODEL}-s0-prefill" in name for name in reached), reached
    assert not any(f"{MODEL}-s1-prefill" in name for name in reached), reached


def test_the_slices_routers_and_the_models_gateway_objects_apply(bench: Bench, cluster: LocalCluster) -> None:
    """The slices' router ConfigMaps and Deployments, the router's Service and account, the route:
    the API server takes them as rendered (server-side apply, the generated CRDs' schemas), and
    each slice's Deployment reads back with its own selector."""
    kinds = ("Gateway", "HTTPRoute", "ConfigMap", "Deployment", "Service", "ServiceAccount", "RoleBinding")
    wanted = [o.manifest for o in bench.rendered.render.rendered.objects if o.kind in kinds and not o.patch]
    wanted = [o for o in wanted if o["metadata"].get("namespace") in (NAMESPACE, "inference-gateway")]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "inference-gateway"}}
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all([namespace, *wanted]))
    for index in SLICES:
        live = cluster.get_json("deployment", f"{MODEL}-epp-s{index}", "-n", NAMESPACE)
        assert live["spec"]["selector"]["matchLabels"]["volcano-platform.io/slice"] == index
        config = cluster.get_json("configmap", f"{MODEL}-epp-s{index}", "-n", NAMESPACE)
        assert config["data"]["config.yaml"] == bench.rendered.router_config(index)
    route = cluster.get_json("httproute", f"{MODEL}-team-a", "-n", NAMESPACE)
    assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == MODEL
