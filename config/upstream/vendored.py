"""The upstream schemas the project ships: CRDs and chart values per upstream project and version.

They live in `upstream/<project>-<version>/` (verbatim files, each folder with its SOURCE and
LICENSE) and are the only schemas the program and its checks read, so a fresh clone validates
exactly what CI validates. A stack that pins a version with no folder here cannot be checked; the
config check says so and names the command that fetches it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

UPSTREAM_DIR = Path(__file__).resolve().parents[2] / "upstream"

# Upstream projects whose schemas are vendored, keyed by the folder prefix.
VOLCANO = "volcano"
LWS = "lws"
PULUMI = "pulumi"
# Not installed by the stack: the newest vendored version is what rendered objects must satisfy.
PROMETHEUS_OPERATOR = "prometheus-operator"
KEDA = "keda"
# The inference gateway's kinds (InferencePool, InferenceObjective; Gateway, HTTPRoute), not
# installed by the stack either. Their CRDs are generated from the Go modules the router pins, by
# each project's own generator (`make upstream-generated`, upstream/generate/), not fetched.
GATEWAY_API_INFERENCE_EXTENSION = "gateway-api-inference-extension"
GATEWAY_API = "gateway-api"
# Google Cloud Managed Service for Prometheus (GKE runs it): its PodMonitoring and ClusterRules,
# generated from its Go module by the generator its shipped CRDs name.
PROMETHEUS_ENGINE = "prometheus-engine"
GENERATED = frozenset({GATEWAY_API_INFERENCE_EXTENSION, GATEWAY_API, PROMETHEUS_ENGINE})
# Istio's DestinationRule (a router behind an `istio` Gateway), not installed by the stack: copied
# from istio/api's one file of every Istio CRD (upstream/istio-<version>/SOURCE).
ISTIO = "istio"

_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def normalize_version(version: str) -> str:
    """Chart versions are written with or without a leading `v`; folders use the bare number."""
    return version[1:] if version.startswith("v") else version


@cache
def vendored_versions(project: str) -> tuple[str, ...]:
    """Versions of `project` with a folder under `upstream/`, oldest first."""
    if not UPSTREAM_DIR.is_dir():
        return ()
    found = []
    for entry in UPSTREAM_DIR.iterdir():
        name, _, version = entry.name.rpartition("-")
        if entry.is_dir() and name == project and _VERSION.match(version):
            found.append(version)
    return tuple(sorted(found, key=lambda v: tuple(int(p) for p in v.split("."))))


def vendored_dir(project: str, version: str) -> Path | None:
    """The folder holding `project`'s schemas at `version`, if vendored."""
    version = normalize_version(version)
    return UPSTREAM_DIR / f"{project}-{version}" if version in vendored_versions(project) else None


def fetch_command(project: str, version: str) -> str:
    """How a user with network access adds a version (see upstream/README.md)."""
    if project in GENERATED:
        return "make upstream-generated"  # at the versions upstream/generate/go.mod pins
    return f"make upstream {project.upper()}={normalize_version(version)}"


def newest_vendored(project: str) -> tuple[str, Path] | None:
    """The newest vendored version of `project` and its folder (for what the stack does not install)."""
    versions = vendored_versions(project)
    return (versions[-1], UPSTREAM_DIR / f"{project}-{versions[-1]}") if versions else None
