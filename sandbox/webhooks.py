"""The admission webhooks of the sandbox's Volcano and LWS, served on 127.0.0.1 with the sandbox's
certificates: the configurations name loopback URLs, since nothing here reaches a Service."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from sandbox.api import Api, Certificates, b64


class AdmissionWebhooks:
    """The part of `LocalCluster` that starts the webhooks' processes and registers them; the
    cluster gives it the attributes and methods below."""

    folder: Path
    ports: dict[str, int]
    certificates: Certificates

    @property
    def kubeconfig(self) -> Path:
        raise NotImplementedError

    def api(self) -> Api:
        raise NotImplementedError

    def wait_for(self, condition: Any, seconds: float, what: str) -> Any:
        raise NotImplementedError

    def _start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Any:
        raise NotImplementedError

    def _start_volcano_admission(self) -> None:
        """Volcano's admission webhooks for the kinds the platform writes, as its chart enables
        them by default (`custom.enabled_admissions`): Queues mutated and validated, PodGroups and
        HyperNodes validated. The webhook manager only fills in the CA of configurations named
        `volcano-admission-service-<path>` (cmd/webhook-manager/app/util.go), so the harness makes
        them, calling 127.0.0.1."""
        port = self.ports["volcano-webhook"]
        base = f"https://127.0.0.1:{port}"
        hooks = {
            "/queues/mutate": ("Mutating", "scheduling.volcano.sh", "v1beta1", "queues", ["CREATE"]),
            "/queues/validate": (
                "Validating",
                "scheduling.volcano.sh",
                "v1beta1",
                "queues",
                ["CREATE", "UPDATE", "DELETE"],
            ),
            "/podgroups/validate": ("Validating", "scheduling.volcano.sh", "v1beta1", "podgroups", ["CREATE"]),
            "/hypernodes/validate": (
                "Validating",
                "topology.volcano.sh",
                "v1alpha1",
                "hypernodes",
                ["CREATE", "UPDATE"],
            ),
        }
        self._start(
            "vc-webhook-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--tls-cert-file={self.certificates.path('tls.crt')}",
                f"--tls-private-key-file={self.certificates.path('tls.key')}",
                f"--ca-cert-file={self.certificates.path('ca.crt')}",
                "--listen-address=127.0.0.1",
                f"--port={port}",
                f"--webhook-url={base}",
                f"--enabled-admission={','.join(hooks)}",
                "--scheduler-name=volcano",
            ],
        )
        ca = b64(self.certificates.folder / "ca.crt")
        group = "/apis/admissionregistration.k8s.io/v1"
        for path, (kind, api_group, version, resource, operations) in hooks.items():
            name = "volcano-admission-service" + path.replace("/", "-")
            configuration = {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": f"{kind}WebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": [
                    {
                        "name": f"{path.strip('/').replace('/', '.')}.volcano.sh",
                        "admissionReviewVersions": ["v1"],
                        "sideEffects": "None",
                        "failurePolicy": "Fail",
                        "clientConfig": {"url": base + path, "caBundle": ca},
                        "rules": [
                            {
                                "apiGroups": [api_group],
                                "apiVersions": [version],
                                "operations": operations,
                                "resources": [resource],
                            }
                        ],
                    }
                ],
            }
            self.api().apply(configuration, f"{group}/{kind.lower()}webhookconfigurations/{name}")

        def serving() -> bool:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True

        self.wait_for(serving, 60, "Volcano's admission webhooks to serve")

    def _start_lws(self) -> None:
        certs = self.folder / "lws-certs"
        certs.mkdir(exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (certs / name).write_bytes((self.certificates.folder / name).read_bytes())
        config = self.folder / "lws-config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.lws.x-k8s.io/v1alpha1",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "webhook": {"host": "127.0.0.1", "port": self.ports["lws-webhook"], "certDir": str(certs)},
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['lws-health']}"},
                    "metrics": {"bindAddress": f"127.0.0.1:{self.ports['lws-metrics']}"},
                }
            )
        )
        self._start("lws-controller", [f"--config={config}", f"--kubeconfig={self.kubeconfig}", "--zap-log-level=2"])
        self._apply_lws_webhooks()

        def healthy() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['lws-health']}/readyz", timeout=2) as response:
                return response.status == 200

        self.wait_for(healthy, 60, "the LWS controller to be ready")

    def _apply_lws_webhooks(self) -> None:
        """LWS's admission webhooks (the paths and rules its controller serves,
        config/webhook/manifests.yaml), called on 127.0.0.1 with the harness's CA."""
        ca = b64(self.certificates.folder / "ca.crt")
        base = f"https://127.0.0.1:{self.ports['lws-webhook']}"
        lws_rule = {
            "apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["leaderworkersets"],
        }  # fmt: skip
        pods = {"matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]}

        def hook(name: str, path: str, rule: dict[str, Any], selector: dict[str, Any] | None = None) -> dict[str, Any]:
            out = {
                "name": name,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {"url": base + path, "caBundle": ca},
                "rules": [rule],
            }
            if selector:
                out["objectSelector"] = selector
            return out

        pod_create = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
        pod_change = {**pod_create, "operations": ["CREATE", "UPDATE"]}
        mutating: dict[str, Any] = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "lws-mutating-webhook-configuration"},
            "webhooks": [
                hook("mleaderworkerset.kb.io", "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", lws_rule),
                hook("mpod.kb.io", "/mutate--v1-pod", pod_create, pods),
            ],
        }
        validating: dict[str, Any] = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "lws-validating-webhook-configuration"},
            "webhooks": [
                hook("vleaderworkerset.kb.io", "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset", lws_rule),
                hook("vpod.kb.io", "/validate--v1-pod", pod_change, pods),
            ],
        }
        group = "/apis/admissionregistration.k8s.io/v1"
        self.api().apply(mutating, f"{group}/mutatingwebhookconfigurations/{mutating['metadata']['name']}")
        self.api().apply(validating, f"{group}/validatingwebhookconfigurations/{validating['metadata']['name']}")
