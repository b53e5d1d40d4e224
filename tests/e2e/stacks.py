"""The stacks the end-to-end tests apply, and the fake nodes they run on.

Each is a stack of the project as committed, pointed at the e2e cluster, with Volcano and LWS
installed elsewhere (the e2e cluster runs them as processes): `volcano.install: false`,
`lws.install: false`.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import yaml

from sandbox.stacks import sandbox_config
from tests.conftest import PROJECT_DIR, stack_raw


def e2e_config(stack: str, kubeconfig: Path, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """The committed stack's config (includes merged) for the e2e cluster, as a sandbox gets it
    (its `secrets` are set encrypted under the e2e passphrase: `secret_names`)."""
    raw = sandbox_config(stack_raw(stack), kubeconfig)
    for key, value in (changes or {}).items():
        raw[key] = value
    return raw


def secret_names(stack: str) -> list[str]:
    """The entries of the committed stack's `secrets`, whose values are encrypted with a key the
    e2e stack does not have: the tests set each anew."""
    return sorted(stack_raw(stack).get("secrets") or {})


def dev_nodes(count: int = 4, gpus: int = 2) -> list[dict[str, Any]]:
    """The dev stack's nodes `dev-gpu-1` .. `dev-gpu-<count>`."""
    return [
        {
            "metadata": {"name": f"dev-gpu-{i}", "labels": {"kubernetes.io/hostname": f"dev-gpu-{i}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}},
        }
        for i in range(1, count + 1)
    ]


def recorded_nodes(dump: str) -> list[dict[str, Any]]:
    """The Nodes of a recorded `kubectl get -o yaml` dump in tests/fixtures/cluster/."""
    document = yaml.safe_load((PROJECT_DIR / "tests" / "fixtures" / "cluster" / dump).read_text())
    return [item for item in document["items"] if item.get("kind") == "Node"]


def stand_in_chart(folder: Path) -> Path:
    """A chart of the project's own, released as `lws` in `lws-system` in place of LWS's (no chart
    can be fetched here, and the e2e cluster runs the LWS controller as a process): one ConfigMap,
    enough for Helm to keep a release and for its records to be read on refresh."""
    files = {
        "lws/Chart.yaml": "apiVersion: v2\nname: lws\nversion: 0.10.0\n",
        "lws/templates/configmap.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stand-in\n  namespace: {{ .Release.Namespace }}\n"
            "data:\n  replicas: {{ .Values.replicaCount | quote }}\n"
        ),
    }
    path = folder / "lws-0.10.0.tgz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path
