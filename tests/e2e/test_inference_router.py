"""The inference gateway's router for real: llm-d's endpoint picker (EPP) v0.7.1, the Gateway API
Inference Extension v1.4.0 EPP runner inside, with flow control on, in front of llm-d's vLLM
simulators, reading its InferencePool, InferenceObjectives and pods from the e2e cluster's API
server. All built from their Go modules (`real-cluster/inference-router`, `inference-sim`).

    extproc-client (the gateway's part: Envoy ext-proc) ──gRPC──> epp ──watch──> kube-apiserver
         │  picked endpoint                                        │ scrape /metrics
         └──────────── POST /v1/completions ────────────> llm-d-inference-sim on 127.0.0.2

Nothing runs the stand-in model pod: no scheduler is named for it and no kubelet runs, so the test
is its kubelet. It gives the pod its address (127.0.0.2, loopback, where the simulator listens)
and marks it Ready when the simulator's `/health/ready` answers, as a readiness probe would.

What the tests show, in order, on one router:

1. With no Ready endpoint a request is held in the router's queue, not refused; at the queue's
   TTL the router answers 503 (`request timed out in queue`).
2. Requests held while the model loads are routed once its pod is Ready, within the TTL.
3. Under saturation, requests of the higher-priority objective are dispatched before those of the
   lower one that were queued earlier.
4. The control: with both objectives at one priority the same load is served in the band's
   fairness order (strict: first come first served), so the test of 3 can fail.

Where the router (gateway-api-inference-extension v1.4.0) decides each:

- pkg/epp/flowcontrol/controller/internal/processor.go, `dispatchCycle`: bands are visited in
  priority order and the head the band's fairness policy picks is dispatched only while the
  saturation detector says below 1.0; otherwise it waits at the head of the line.
- pkg/epp/saturationdetector/framework/plugins/utilizationdetector/detector.go, `Saturation`: no
  candidate endpoint is saturation 1.0 (so held, not refused); else the mean over endpoints of
  max(waiting / queueDepthThreshold, KV use / kvCacheUtilThreshold), stale metrics counting 1.0.
- pkg/epp/flowcontrol/controller/controller.go (`createRequestContext`: the TTL is a context
  deadline) and internal/item.go (`inferOutcome`: EvictedTTL); pkg/epp/requestcontrol/admission.go
  (`translateFlowControlOutcome`: ServiceUnavailable, "request timed out in queue");
  pkg/epp/handlers/server.go (`buildErrResponse`: an immediate 503 with the error as its body).
- Without the `flowControl` gate the legacy admission lets the request through and
  pkg/epp/requestcontrol/director.go answers 503 at once ("failed to find candidate pods").

The router's config and the objects it reads are what the platform renders for a model behind its
gateway (`router_under_test`: the dev stack with a gateway, two consuming tenants at two classes),
and the router reads them with the Role the platform renders for it, bound to a user of the test's.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.render import render_stack
from sandbox.api import PREVIEW_TOKEN, PREVIEW_USER, free_port
from sandbox.cluster import PROJECT, LocalCluster
from tests.conftest import stack_raw, write_stack
from tests.e2e.conftest import start_cluster
from tests.e2e.processes import Gateway, Processes, local_arguments, scrape, total
from tests.e2e.stacks import dev_nodes

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


NAMESPACE = "router-e2e"
MODEL = "chat"
SERVED_MODEL = "Qwen/Qwen3-0.6B"
HIGH, LOW = "p1-high", "p2-normal"
"""Two PriorityClasses of the platform's defaults; the lower is the gateway's baseline (band 0)."""
TENANTS = {HIGH: "team-a", LOW: "team-b"}
"""Each class's consuming tenant, whose name is its requests' fairness ID."""
BANDS = {HIGH: 1, LOW: 0}
QUEUE_TTL_SECONDS = 8
"""The router's `defaultRequestTTL`."""

POD_IP = "127.0.0.2"
"""The stand-in model pod's address: loopback, where its simulator answers."""
SIM_MAX_NUM_SEQS = 5
"""Requests the simulator runs at once; more wait in its queue (`vllm:num_requests_waiting`)."""
SIM_STARTUP_SECONDS = 3
"""How long the simulator's `/health/ready` answers 503: the model loading."""
TOKEN_SECONDS = 0.1
"""The simulator's time to first token and between tokens."""
FILLER_TOKENS = 60
"""A load request's length: 6 s at `TOKEN_SECONDS`."""
PROBE_TOKENS = 2
"""A measured request's length."""
BATCH = 5
"""Measured requests per objective in a saturation run."""


@dataclass(frozen=True)
class RouterSetup:
    config: dict[str, Any]
    """The router's `EndpointPickerConfig` (the ConfigMap's `config.yaml`)."""
    objects: list[dict[str, Any]]
    """What the platform applies for the model's router: Namespace, ConfigMap, InferencePool,
    InferenceObjectives."""
    objectives: dict[str, str]
    """PriorityClass -> the name of its InferenceObjective."""
    saturation_queue_depth: int
    """Waiting requests per endpoint at which the router holds requests back."""
    pod_labels: dict[str, str]
    """What the pool selects: the labels the model's pods carry."""
    arguments: list[str]
    """The router container's command line as rendered."""


def gateway_stack(sim_port: int) -> dict[str, Any]:
    """The dev stack with its model behind the gateway: served to its own tenant at `p1-high` and to
    a second tenant at `p2-normal` (the baseline, band 0), on the simulator's port, with the queue's
    TTL short enough to wait out and first-come-first-served within a band."""
    raw = stack_raw("dev")
    raw["tenants"]["team-a"]["namespaces"] = [NAMESPACE]
    raw["tenants"]["team-a"]["gateway"] = {"priorityClass": HIGH}
    raw["tenants"]["team-b"] = {"queue": {"capability": {"nvidia.com/gpu": 2}}, "gateway": {"priorityClass": LOW}}
    raw["models"] = {
        MODEL: {
            **raw["models"]["qwen3-0-6b"],
            "servedModelName": SERVED_MODEL,
            "priorityClass": HIGH,
            "port": sim_port,
            "gateway": {"enabled": True, "consumers": ["team-a", "team-b"]},
        }
    }
    raw["gateway"] = {
        "className": "e2e",
        "domain": "llm.e2e.example",
        "router": {"flowControl": {"queueTimeoutSeconds": QUEUE_TTL_SECONDS, "fairness": "strict"}},
    }
    return raw


def router_under_test(folder: Path, sim_port: int) -> RouterSetup:
    """The router of one model behind the gateway as the platform renders it (`render`): the pool
    `<model>` selecting the model's pods on their serving port, the router's config in ConfigMap
    `<model>-epp`, one InferenceObjective `<model>-<priorityclass>` per consuming tenant's class,
    and the Role the router reads with. The saturation detector is left at its defaults (v1.4.0
    `saturationdetector/.../utilizationdetector/config.go`: 5 waiting requests per endpoint, or
    80 % of the KV cache)."""
    path = write_stack(folder / "Pulumi.router.yaml", gateway_stack(sim_port))
    render = render_stack(PROJECT, "router", path)
    kinds = ("ConfigMap", "InferencePool", "InferenceObjective", "ServiceAccount", "Role", "RoleBinding")
    deployment = render.rendered.find("Deployment", f"{MODEL}-epp", NAMESPACE).manifest
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    objects += [o.manifest for o in render.rendered.objects if o.kind in kinds and o.namespace == NAMESPACE]
    config_map = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == f"{MODEL}-epp")
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    objectives = {}
    for objective in (o for o in objects if o["kind"] == "InferenceObjective"):
        cls = objective["metadata"]["name"].removeprefix(f"{MODEL}-")
        assert objective["spec"]["priority"] == BANDS[cls], "the platform ranks the classes into these bands"
        objectives[cls] = objective["metadata"]["name"]
    assert set(objectives) == set(BANDS)
    pool = next(o for o in objects if o["kind"] == "InferencePool")
    depth = int((config.get("saturationDetector") or {}).get("queueDepthThreshold") or 5)
    return RouterSetup(config, objects, objectives, depth, pool["spec"]["selector"]["matchLabels"], container["args"])


def stand_in_pod(labels: dict[str, str], port: int) -> dict[str, Any]:
    """A model pod with the labels the pool selects, which no scheduler binds (its scheduler runs
    nowhere): the test plays its kubelet."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{MODEL}-0", "namespace": NAMESPACE, "labels": dict(labels)},
        "spec": {
            "schedulerName": "e2e-nobody",
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "ports": [{"containerPort": port}]}],
        },
    }


@dataclass
class Bench:
    cluster: LocalCluster
    setup: RouterSetup
    processes: Processes
    programs: dict[str, Path]
    folder: Path
    sim_port: int
    metrics_port: int
    gateway: Gateway
    pod: dict[str, Any]
    epp_log: Path
    findings: dict[str, Any] = field(default_factory=dict)

    def request(self, rid: str, cls: str | None, tokens: int, forward: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": rid, "model": SERVED_MODEL, "prompt": f"request {rid}", "max_tokens": tokens}
        out["forward"] = forward
        if cls is not None:
            out["objective"] = self.setup.objectives[cls]
            out["fairness"] = TENANTS[cls]
        else:
            out["fairness"] = "load"
        return out

    def router_metrics(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        return scrape(self.metrics_port)

    def wait_for(self, condition: Any, seconds: float, what: str) -> Any:
        def alive_and(condition: Any = condition) -> Any:
            self.processes.check_alive()
            return condition()

        return self.cluster.wait_for(alive_and, seconds, what)

    def set_pod_status(self, ready: bool) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        flag = "True" if ready else "False"
        conditions = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
            {"type": "Ready", "status": flag, "lastTransitionTime": now},
        ]
        status = {"phase": "Running", "podIP": POD_IP, "podIPs": [{"ip": POD_IP}], "conditions": conditions}
        name = self.pod["metadata"]["name"]
        self.cluster.api().request(
            "PATCH",
            f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/status",
            {"status": status},
            "application/merge-patch+json",
        )

    def start_simulator(self) -> float:
        self.processes.start(
            "llm-d-inference-sim",
            [
                str(self.programs["llm-d-inference-sim"]),
                f"--port={self.sim_port}",
                f"--model={SERVED_MODEL}",
                "--force-dummy-tokenizer",
                "--mode=random",
                "--seed=1",
                f"--max-num-seqs={SIM_MAX_NUM_SEQS}",
                f"--time-to-first-token={int(TOKEN_SECONDS * 1000)}ms",
                f"--inter-token-latency={int(TOKEN_SECONDS * 1000)}ms",
                f"--startup-duration={SIM_STARTUP_SECONDS}s",
            ],
            {"POD_IP": POD_IP},
        )
        return time.time()

    def readiness(self) -> int:
        """The simulator's `/health/ready` status, 0 while it does not listen."""
        try:
            with urllib.request.urlopen(f"http://{POD_IP}:{self.sim_port}/health/ready", timeout=2) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return 0

    def objective_updates(self, name: str) -> int:
        """How often the router has read the objective (its reconciler's log line)."""
        text = self.epp_log.read_text(errors="replace")
        return sum(1 for line in text.splitlines() if "Added/Updated InferenceObjective" in line and name in line)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("router-cluster"), real_programs, dev_nodes(count=1))


@pytest.fixture(scope="module")
def bench(cluster: LocalCluster, real_programs: dict[str, Path]) -> Iterator[Bench]:
    """The router's objects applied, the stand-in pod created with an address but not Ready (its
    model loading), the router started and serving (it has read its pool)."""
    folder = cluster.folder / "router"
    folder.mkdir()
    sim_port = free_port()
    setup = router_under_test(folder, sim_port)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(setup.objects))
    # The router reads with the platform's Role only: bound here to a user with a token, as the
    # platform binds it to the router's ServiceAccount.
    role = next(o for o in setup.objects if o["kind"] == "Role")
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{role['metadata']['name']}-e2e", "namespace": NAMESPACE},
        "subjects": [{"kind": "User", "name": PREVIEW_USER, "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]},
    }
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(binding))
    router_kubeconfig = folder / "router.kubeconfig"
    router_kubeconfig.write_text(cluster.kubeconfig_text(PREVIEW_TOKEN))
    pod = stand_in_pod(setup.pod_labels, sim_port)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(pod))
    config_file = folder / "config.yaml"  # the ConfigMap's key, mounted as the kubelet would
    config_map = next(o for o in setup.objects if o["kind"] == "ConfigMap")
    config_file.write_text(config_map["data"]["config.yaml"])
    grpc_port, health_port, metrics_port = free_port(), free_port(), free_port()
    processes = Processes(folder)
    processes.start(
        "epp",
        [
            str(real_programs["epp"]),
            *local_arguments(
                setup.arguments,
                {
                    "--config-file": str(config_file),
                    "--grpc-port": str(grpc_port),
                    "--grpc-health-port": str(health_port),
                    "--metrics-port": str(metrics_port),
                },
            ),
            # The test's own: no profiler port, and the endpoint's metrics read five times a second.
            "--enable-pprof=false",
            "--refresh-prometheus-metrics-interval=200ms",
        ],
        {
            "KUBECONFIG": str(router_kubeconfig),
            # llm-d's main sets up OpenTelemetry tracing whatever the flags say: sample nothing.
            "OTEL_TRACES_SAMPLER_ARG": "0",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:1",
        },
    )
    gateway = Gateway(
        real_programs["extproc-client"], grpc_port, health_port, folder / "extproc-client.log", setup.arguments
    )
    made = Bench(
        cluster, setup, processes, real_programs, folder, sim_port, metrics_port, gateway, pod, folder / "epp.log"
    )
    try:
        made.set_pod_status(ready=False)
        gateway.wait_ready(90)
        made.wait_for(lambda: "inference_pool_ready_pods" in made.router_metrics(), 30, "the router's pool metrics")
        assert total(made.router_metrics(), "inference_pool_ready_pods") == 0
        yield made
    finally:
        gateway.close()
        processes.stop()
        (folder / "findings.json").write_text(json.dumps(made.findings, indent=2, sort_keys=True))
        print(f"\nrouter findings ({folder / 'findings.json'}):\n{json.dumps(made.findings, indent=2)}")


# -- (b) no Ready endpoint ------------------------------------------------------------------------


def test_without_a_ready_endpoint_requests_wait_in_the_queue_until_their_ttl(bench: Bench) -> None:
    ids = ["ttl-high", "ttl-low"]
    sent = bench.gateway.send(bench.request(ids[0], HIGH, PROBE_TOKENS), bench.request(ids[1], LOW, PROBE_TOKENS))
    bench.wait_for(
        lambda: total(bench.router_metrics(), "inference_extension_flow_control_queue_size") == 2,
        QUEUE_TTL_SECONDS - 2,
        "both requests in the router's flow-control queue",
    )
    assert bench.gateway.answered(ids) == {}, "the router answered a request while it has no endpoint"
    answers = bench.gateway.wait("answered", ids, QUEUE_TTL_SECONDS + 30)
    waited = {i: a["answered"] - a["sent"] for i, a in answers.items()}
    bench.findings["ttl"] = {
        "ttl_seconds": QUEUE_TTL_SECONDS,
        "waited_seconds": {i: round(w, 3) for i, w in waited.items()},
        "status": {i: a.get("status") for i, a in answers.items()},
        "body": {i: a.get("body") for i, a in answers.items()},
        "handed_over_after_seconds": {i: round(a["sent"] - sent, 3) for i, a in answers.items()},
    }
    for rid, answer in answers.items():
        assert not answer.get("endpoint"), f"{rid} was routed with no Ready endpoint: {answer}"
        assert answer.get("status") == 503, answer
        assert "timed out in queue" in answer.get("body", ""), answer
        assert QUEUE_TTL_SECONDS - 0.5 <= waited[rid] <= QUEUE_TTL_SECONDS + 10, (rid, waited[rid])
    assert total(bench.router_metrics(), "inference_extension_flow_control_queue_size") == 0


def test_requests_held_while_the_model_loads_are_routed_once_its_pod_is_ready(bench: Bench) -> None:
    started = bench.start_simulator()
    ids = ["hold-high", "hold-low"]
    sent = bench.gateway.send(bench.request(ids[0], HIGH, PROBE_TOKENS), bench.request(ids[1], LOW, PROBE_TOKENS))
    # The kubelet's part: a readiness probe on the model server, then the pod's Ready condition.
    probes: list[int] = []

    def probe() -> bool:
        probes.append(bench.readiness())
        return probes[-1] == 200

    bench.wait_for(probe, SIM_STARTUP_SECONDS + 30, "the simulator's /health/ready")
    queued = total(bench.router_metrics(), "inference_extension_flow_control_queue_size")
    early = bench.gateway.answered(ids)
    ready_at = time.time()
    bench.set_pod_status(ready=True)
    answers = bench.gateway.wait("answered", ids, QUEUE_TTL_SECONDS + 10)
    forwarded = bench.gateway.wait("forwarded", ids, 30)
    bench.findings["hold"] = {
        "readiness_probes": probes,
        "queued_when_pod_became_ready": queued,
        "pod_ready_after_send_seconds": round(ready_at - sent, 3),
        "simulator_ready_after_start_seconds": round(ready_at - started, 3),
        "answered_after_pod_ready_seconds": {i: round(a["answered"] - ready_at, 3) for i, a in answers.items()},
        "waited_seconds": {i: round(a["answered"] - a["sent"], 3) for i, a in answers.items()},
        "endpoint": {i: a.get("endpoint") for i, a in answers.items()},
        "forward_status": {i: f.get("forward_status") for i, f in forwarded.items()},
    }
    assert 503 in probes, f"the simulator was never seen loading (its probes: {probes})"
    assert early == {}, f"answered before the pod was Ready: {early}"
    assert queued == 2, f"the router's queue held {queued} requests, not 2"
    for rid, answer in answers.items():
        assert answer.get("endpoint") == f"{POD_IP}:{bench.sim_port}", answer
        assert answer["answered"] >= ready_at, answer
        assert answer["answered"] - answer["sent"] < QUEUE_TTL_SECONDS, answer
        assert forwarded[rid].get("forward_status") == 200, forwarded[rid]


# -- (a) priority under saturation ----------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    fillers: dict[str, dict[str, Any]]
    filled: dict[str, dict[str, Any]]
    low: dict[str, dict[str, Any]]
    high: dict[str, dict[str, Any]]
    queued_before_release: float


def saturated_run(bench: Bench, tag: str) -> Run:
    """Saturates the one endpoint through the router (its queue at the detector's depth), then
    queues BATCH requests of the low objective and, after them, BATCH of the high one."""
    fill = [f"{tag}-load-{i}" for i in range(SIM_MAX_NUM_SEQS + bench.setup.saturation_queue_depth)]
    bench.gateway.send(*(bench.request(i, None, FILLER_TOKENS) for i in fill))
    fillers = bench.gateway.wait("answered", fill, 20)

    def saturated() -> bool:
        page = scrape(bench.sim_port, POD_IP)
        sim_waiting = total(page, "vllm:num_requests_waiting")
        router_view = total(bench.router_metrics(), "inference_pool_per_pod_queue_size")
        return sim_waiting >= bench.setup.saturation_queue_depth and router_view >= bench.setup.saturation_queue_depth

    bench.wait_for(saturated, 10, "the simulator's queue at the saturation depth, as the router sees it")
    low = [f"{tag}-low-{i}" for i in range(BATCH)]
    high = [f"{tag}-high-{i}" for i in range(BATCH)]
    bench.gateway.send(*(bench.request(i, LOW, PROBE_TOKENS) for i in low))
    time.sleep(0.3)
    bench.gateway.send(*(bench.request(i, HIGH, PROBE_TOKENS) for i in high))
    bench.wait_for(
        lambda: total(bench.router_metrics(), "inference_extension_flow_control_queue_size") >= 2 * BATCH,
        5,
        "every measured request in the router's queue",
    )
    queued_at = time.time()
    answered = bench.gateway.wait("answered", low + high, 60)
    forwarded = bench.gateway.wait("forwarded", fill + low + high, 60)
    for rid in low + high:
        assert answered[rid].get("endpoint"), answered[rid]
        assert forwarded[rid].get("forward_status") == 200, forwarded[rid]
    return Run(
        fillers,
        {i: forwarded[i] for i in fill},
        {i: answered[i] for i in low},
        {i: answered[i] for i in high},
        queued_at,
    )


def high_first_share(run: Run) -> float:
    """Of all (high, low) pairs, the share whose high request was answered first."""
    pairs = [(h["seq"], low["seq"]) for h in run.high.values() for low in run.low.values()]
    return sum(1 for h, low in pairs if h < low) / len(pairs)


def describe(run: Run) -> dict[str, Any]:
    release = min(f["done"] for f in run.filled.values())
    order = sorted([*run.low.values(), *run.high.values()], key=lambda a: a["seq"])
    return {
        "answer_order": [a["id"].rsplit("-", 2)[1] + a["id"].rsplit("-", 1)[1] for a in order],
        "high_first_share": round(high_first_share(run), 3),
        "low_sent_before_high_seconds": round(
            min(h["sent"] for h in run.high.values()) - max(low["sent"] for low in run.low.values()), 3
        ),
        "held_seconds": {
            "low": sorted(round(a["answered"] - a["sent"], 3) for a in run.low.values()),
            "high": sorted(round(a["answered"] - a["sent"], 3) for a in run.high.values()),
        },
        "answered_after_first_load_done_seconds": sorted(round(a["answered"] - release, 3) for a in order),
        "burst_span_seconds": round(order[-1]["answered"] - order[0]["answered"], 3),
    }


def assert_held_until_capacity(run: Run) -> None:
    """Nothing measured was routed before the endpoint had room again: the first load request
    done (the router scrapes the endpoint every 50 ms)."""
    release = min(f["done"] for f in run.filled.values())
    for answer in [*run.low.values(), *run.high.values()]:
        assert answer["answered"] >= release - 0.5, (answer, release)
        assert answer["answered"] - answer["sent"] >= 1.0, answer
    for answer in run.fillers.values():
        assert answer.get("endpoint"), answer
        assert answer["answered"] - answer["sent"] < 3, f"a load request was held: {answer}"


def test_under_saturation_the_higher_priority_objective_is_dispatched_first(bench: Bench) -> None:
    run = saturated_run(bench, "prio")
    bench.findings["priority"] = describe(run)
    assert_held_until_capacity(run)
    share = high_first_share(run)
    assert share >= 0.8, f"high-priority requests were not dispatched first: {describe(run)}"


def test_at_one_priority_the_same_load_is_served_first_come_first_served(bench: Bench) -> None:
    """The control: the high objective lowered to the low one's priority, the run again."""
    name = bench.setup.objectives[HIGH]
    before = bench.objective_updates(name)
    bench.cluster.kubectl(
        "patch", "inferenceobjective.inference.networking.x-k8s.io", name, "-n", NAMESPACE,
        "--type=merge", "-p", json.dumps({"spec": {"priority": BANDS[LOW]}}),
    )  # fmt: skip
    bench.wait_for(lambda: bench.objective_updates(name) > before, 30, "the router to read the changed objective")
    run = saturated_run(bench, "fifo")
    bench.findings["same_priority"] = describe(run)
    assert_held_until_capacity(run)
    # The stack's `fairness: strict`: first come, first served across tenants, the earlier (low) first.
    share = high_first_share(run)
    assert share <= 0.2, f"at one priority the later requests went first: {describe(run)}"


# -- the rest of what the platform renders for the gateway --------------------------------------


def test_every_gateway_object_the_platform_renders_applies(bench: Bench) -> None:
    """The shared Gateway, the routes per consuming tenant, the router's Deployment and Service: the
    API server takes them as rendered (the generated CRDs' schemas and CEL rules included), and the
    objects read back as written."""
    render = render_stack(PROJECT, "router", bench.folder / "Pulumi.router.yaml")
    kinds = ("Namespace", "Gateway", "HTTPRoute", "Deployment", "Service", "ServiceAccount", "RoleBinding")
    wanted = [o.manifest for o in render.rendered.objects if o.kind in kinds and not o.patch]
    namespaces = [o for o in wanted if o["kind"] == "Namespace"]
    routes = [o for o in wanted if o["kind"] == "HTTPRoute"]
    assert {o["metadata"]["name"] for o in routes} == {f"{MODEL}-team-a", f"{MODEL}-team-b"}
    assert any(o["kind"] == "Gateway" for o in wanted) and any(o["kind"] == "Deployment" for o in wanted)
    documents = namespaces + [o for o in wanted if o["kind"] != "Namespace"]
    bench.cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    for route in routes:
        live = bench.cluster.get_json("httproute", route["metadata"]["name"], "-n", NAMESPACE)
        assert live["spec"]["rules"][0]["backendRefs"][0]["name"] == MODEL
        assert live["spec"]["hostnames"] == route["spec"]["hostnames"]
    gateway = bench.cluster.get_json("gateway", "inference", "-n", "inference-gateway")
    assert {listener["name"] for listener in gateway["spec"]["listeners"]} == {"t-team-a", "t-team-b"}
