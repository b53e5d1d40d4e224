"""A real Kubernetes cluster on 127.0.0.1, made of the programs `programs.py` builds.

etcd, kube-apiserver (token authentication, RBAC), kube-controller-manager and kube-scheduler;
KWOK's controller turning Node objects into heartbeating fake GPU nodes and bound pods into Running ones; Volcano's
scheduler and controller-manager; the LeaderWorkerSet controller with its admission webhooks served
on 127.0.0.1. Volcano and LWS are "installed elsewhere" for the stack under test
(`volcano.install: false`, `lws.install: false`): their CRDs come from the project's vendored
copies, their processes run here, and the scheduler reads the very policy the stack applied, copied
from its ConfigMap into the file it watches, as the kubelet would.

Every process writes to its own log under the cluster's folder; `stop` ends them all, and
`last_lines` is what a failing test prints.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from config.upstream.volcano import VOLCANO_DEFAULT_SCHEDULER_CONF, VOLCANO_NAMESPACE
from sandbox.api import (
    ADMIN_TOKEN,
    PREVIEW_TOKEN,
    PREVIEW_USER,
    WORKLOAD_TOKEN,
    WORKLOAD_USER,
    Api,
    ApiError,
    Certificates,
    KubectlError,
    free_port,
)
from sandbox.crds import crd_documents
from sandbox.diagnostics import topology_report
from sandbox.scheduler_conf import follow_scheduler_conf
from sandbox.webhooks import AdmissionWebhooks

PROJECT = Path(__file__).resolve().parents[1]
STAGES = Path(__file__).resolve().parent / "kwok-stages.yaml"
FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
"""KWOK manages exactly the nodes that carry this annotation."""
SERVICE_CIDR = "10.96.0.0/24"
POD_CIDR = "10.244.0.0/16"
"""Status values only: nothing here connects to a pod or Service address."""


WHATIF_KINDS = (
    "nodes,namespaces,pods,priorityclasses,deployments,services,persistentvolumeclaims,queues.scheduling.volcano.sh,"
    "podgroups.scheduling.volcano.sh,hypernodes.topology.volcano.sh,leaderworkersets.leaderworkerset.x-k8s.io,"
    "customresourcedefinitions"
)
"""What `volcano-platform whatif --help` tells a user to dump."""


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


def _end(processes: list[Process], how: signal.Signals, seconds: float) -> None:
    """Signal every process still running, wait for all of them up to `seconds`, then kill."""
    for process in processes:
        if process.popen.poll() is None:
            process.popen.send_signal(how)
    deadline = time.monotonic() + seconds
    for process in processes:
        try:
            process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.popen.kill()
            process.popen.wait()


@dataclass
class LocalCluster(AdmissionWebhooks):
    folder: Path
    programs: dict[str, Path]
    processes: list[Process] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    _stop_sync: threading.Event = field(default_factory=threading.Event)
    _sync_thread: threading.Thread | None = None
    _api: Api | None = None
    certificates: Certificates = field(init=False)
    """Made by `start`."""

    # -- paths -------------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def scheduler_conf(self) -> Path:
        return self.folder / "volcano-scheduler.conf"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def api(self) -> Api:
        if self._api is None:
            self._api = Api(self.server, ADMIN_TOKEN, self.certificates.path("ca.crt"))
        return self._api

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, nodes: list[dict[str, Any]]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "logs").mkdir(exist_ok=True)
        self.certificates = Certificates.make(self.folder / "pki")
        for name in ("etcd", "etcd-peer", "apiserver", "volcano-webhook", "lws-webhook", "lws-health", "lws-metrics"):
            self.ports[name] = free_port()
        self._write_kubeconfig()
        self._start_etcd()
        self._start_apiserver()
        self._install_crds()
        self._start("kube-controller-manager", self._controller_manager_args())
        # Pods that name no scheduler (the gateway's routers, anything the stack does not gang)
        # are Kubernetes' own scheduler's, as on a cluster; Volcano takes those that name it.
        self._start("kube-scheduler", [
            f"--kubeconfig={self.kubeconfig}", "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
        ])  # fmt: skip
        self.create_nodes(nodes)
        self._start("kwok", self._kwok_args())
        self._start_volcano()
        self._start_lws()
        self.wait_for(self._nodes_ready(len(nodes)), 120, "every fake node Ready and untainted")

    def stop(self) -> None:
        self._stop_sync.set()
        if self._sync_thread is not None:
            self._sync_thread.join(timeout=5)
        clients = [p for p in self.processes if p.name not in ("kube-apiserver", "etcd")]
        _end(clients, signal.SIGTERM, 10)
        # The API server keeps nothing of its own, and its graceful shutdown waits out every open
        # watch (over 30 s here, for every cluster a test run stops): it is killed. etcd, which
        # keeps the sandbox's objects between `down` and `up`, stops gracefully once nothing
        # talks to it.
        _end([p for p in self.processes if p.name == "kube-apiserver"], signal.SIGKILL, 10)
        _end([p for p in self.processes if p.name == "etcd"], signal.SIGTERM, 15)

    def last_lines(self, count: int = 30, names: tuple[str, ...] = ("kube-apiserver", "vc-scheduler")) -> str:
        out = []
        for process in self.processes:
            if process.name in names or process.popen.poll() not in (None, 0):
                lines = process.log.read_text(errors="replace").splitlines()[-count:]
                out.append(f"--- {process.name} (exit {process.popen.poll()}), last {len(lines)} lines:")
                out.extend(lines)
        out.extend(topology_report(self.get_json, [(p.name, p.log) for p in self.processes], count))
        return "\n".join(out)

    def wait_for(self, condition: Any, seconds: float, what: str) -> Any:
        deadline = time.monotonic() + seconds
        last: Exception | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                result = condition()
            except (ApiError, OSError, subprocess.CalledProcessError) as error:
                last, result = error, None
            if result:
                return result
            time.sleep(0.5)
        raise TimeoutError(f"waited {seconds:.0f} s for {what}" + (f" (last error: {last})" if last else ""))

    def _check_alive(self) -> None:
        for process in self.processes:
            if process.popen.poll() is not None:
                raise RuntimeError(f"{process.name} exited with {process.popen.returncode}:\n{self.last_lines()}")

    def _start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Process:
        log = self.folder / "logs" / f"{name}.log"
        with open(log, "wb") as handle:  # the process keeps its own descriptor
            popen = subprocess.Popen(
                [str(self.programs[name]), *args],
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    # -- kubectl -----------------------------------------------------------------------------

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        result = subprocess.run(
            [str(self.programs["kubectl"]), "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, ["kubectl", *args], result.stdout, result.stderr)
        return result.stdout

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", "--show-managed-fields", *args))

    def dump(self, path: Path) -> Path:
        """The cluster as `whatif --from` reads it, written the way its help says to."""
        path.write_text(self.kubectl("get", WHATIF_KINDS, "-A", "-o", "json", "--show-managed-fields"))
        return path

    # -- components ---------------------------------------------------------------------------

    def kubeconfig_text(self, token: str = ADMIN_TOKEN) -> str:
        """A kubeconfig of the cluster that authenticates with `token`."""
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "e2e",
                        "cluster": {"server": self.server, "certificate-authority": self.certificates.path("ca.crt")},
                    }
                ],
                "users": [{"name": "e2e", "user": {"token": token}}],
                "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e"}}],
                "current-context": "e2e",
            }
        )

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(self.kubeconfig_text())
        os.chmod(self.kubeconfig, 0o600)

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        self._start(
            "etcd",
            [
                "--data-dir", str(self.folder / "etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"default={peer}",
                "--unsafe-no-fsync", "--quota-backend-bytes", str(4 << 30), "--log-level", "warn",
            ],
        )  # fmt: skip

        def healthy() -> bool:
            with urllib.request.urlopen(f"{client}/health", timeout=2) as response:
                return b'"health":"true"' in response.read()

        self.wait_for(healthy, 60, "etcd to be healthy")

    def _start_apiserver(self) -> None:
        tokens = self.folder / "pki" / "tokens.csv"
        tokens.write_text(
            f'{ADMIN_TOKEN},admin,admin,"system:masters"\n{PREVIEW_TOKEN},{PREVIEW_USER},{PREVIEW_USER}\n'
            f"{WORKLOAD_TOKEN},{WORKLOAD_USER},{WORKLOAD_USER}\n"
        )
        self._start(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                f"--secure-port={self.ports['apiserver']}",
                f"--tls-cert-file={self.certificates.path('tls.crt')}",
                f"--tls-private-key-file={self.certificates.path('tls.key')}",
                f"--client-ca-file={self.certificates.path('ca.crt')}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={self.certificates.path('sa.pub')}",
                f"--service-account-signing-key-file={self.certificates.path('sa.key')}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true", "--profiling=false", "--enable-priority-and-fairness=false",
                "--endpoint-reconciler-type=none",
            ],
        )  # fmt: skip
        self.wait_for(lambda: self.api().get("/readyz") == "ok", 120, "kube-apiserver to be ready")

    def _install_crds(self) -> None:
        """The CRDs of what the stack renders and of what the processes watch (`sandbox.crds`).
        The LWS CRD names a conversion webhook behind a Service; with one served version nothing
        is ever converted, so it goes."""
        crds = crd_documents()
        for crd in crds:
            crd["spec"].pop("conversion", None)
            self.api().apply(crd, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
        names = [crd["metadata"]["name"] for crd in crds]

        def established() -> bool:
            for name in names:
                status = (
                    self.api().get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}").get("status", {})
                )
                if not any(
                    c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or []
                ):
                    return False
            return True

        self.wait_for(established, 60, "the CRDs to be established")

    def _controller_manager_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
            f"--service-account-private-key-file={self.certificates.path('sa.key')}",
            f"--root-ca-file={self.certificates.path('ca.crt')}",
            "--use-service-account-credentials=false",
            # Nodes KWOK stops heartbeating (every 30 to 50 s) are tainted and their pods
            # evicted, as on a cluster.
            "--node-monitor-grace-period=120s",
        ]  # fmt: skip

    def create_nodes(self, nodes: list[dict[str, Any]]) -> None:
        """Each node as recorded (name, labels, taints, capacity), managed by KWOK; its
        conditions are KWOK's to set."""
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(self._create_node, nodes))

    def _create_node(self, source: dict[str, Any]) -> None:
        """One node, as `create_nodes` describes."""
        metadata = source["metadata"]
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": metadata["name"],
                "labels": dict(metadata.get("labels") or {}),
                "annotations": {FAKE_NODE_ANNOTATION[0]: FAKE_NODE_ANNOTATION[1]},
            },
            "spec": {k: v for k, v in (source.get("spec") or {}).items() if k in ("taints", "unschedulable")},
        }
        self.api().request("POST", "/api/v1/nodes", node)
        status = source.get("status") or {}
        capacity = status.get("capacity") or status.get("allocatable") or {}
        self.api().request(
            "PATCH",
            f"/api/v1/nodes/{metadata['name']}/status",
            {"status": {"capacity": capacity, "allocatable": status.get("allocatable") or capacity}},
            "application/merge-patch+json",
        )

    def _kwok_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--config={STAGES}",
            f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION[0]}={FAKE_NODE_ANNOTATION[1]}",
            f"--cidr={POD_CIDR}", "--node-ip=127.0.0.1", "--server-address=127.0.0.1:0",
        ]  # fmt: skip

    def _nodes_ready(self, count: int) -> Any:
        def ready() -> bool:
            items = self.api().get("/api/v1/nodes")["items"]
            fake = [n for n in items if (n["metadata"].get("annotations") or {}).get(FAKE_NODE_ANNOTATION[0])]
            return len(fake) == count and all(
                any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in (n.get("status") or {}).get("conditions") or []
                )
                and not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints", []))
                for n in fake
            )

        return ready

    def _start_volcano(self) -> None:
        self.api().apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VOLCANO_NAMESPACE}},
            f"/api/v1/namespaces/{VOLCANO_NAMESPACE}",
        )
        self._start_volcano_admission()
        self.scheduler_conf.write_text(VOLCANO_DEFAULT_SCHEDULER_CONF)  # until the stack's policy is applied
        volcano_env = {"KUBE_POD_NAMESPACE": VOLCANO_NAMESPACE}
        self._start(
            "vc-controller-manager",
            [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--scheduler-name=volcano",
             # The controllers of what the platform uses: PodGroups of plain pods and their
             # phases, Queue states, HyperNodes from node labels. The others watch Volcano Job
             # and flow kinds this cluster has no CRD for.
             "--controllers=pg-controller,queue-controller,hyperNode-controller",
             "--enable-healthz=false", "--enable-metrics=false", "-v=2"],
            volcano_env,
        )  # fmt: skip
        self._start(
            "vc-scheduler",
            [f"--kubeconfig={self.kubeconfig}", f"--scheduler-conf={self.scheduler_conf}",
             "--scheduler-name=volcano", "--leader-elect=false", "--schedule-period=500ms",
             "--enable-healthz=false", "--enable-metrics=false", "-v=3"],
            volcano_env,
        )  # fmt: skip
        self._sync_thread = threading.Thread(target=self._sync_scheduler_conf, name="scheduler-conf", daemon=True)
        self._sync_thread.start()

    def _sync_scheduler_conf(self) -> None:
        follow_scheduler_conf(self.api, self.scheduler_conf, self._stop_sync)

    def scheduler_conf_synced(self, text: str) -> bool:
        return self.scheduler_conf.read_text() == text
