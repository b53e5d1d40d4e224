"""Fixtures of the end-to-end tests: the programs, a real cluster per stack, the real Pulumi.

A test that fails prints the last lines of the API server's and the scheduler's logs (and of any
process that died). Without Go these tests skip locally and fail in CI (`CI=true`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.cluster import LocalCluster
from sandbox.programs import BuildError, programs

_CLUSTERS: list[LocalCluster] = []
EXTRA_LOGS: list[Path] = []
"""Logs of processes a test runs beside the cluster's (a router, model servers): a failing test
prints their last lines too. A test adds its logs and removes them when its processes stop."""


class _Programs(dict[str, Path]):
    """The cluster's and Pulumi's programs; the router's and the model simulator's are found (or
    built, or waited for while `.ci/run` builds them beside the tests) when a test first asks for
    one, so the tests that need none start without them."""

    def __missing__(self, name: str) -> Path:
        self.update(_built(serving=True))
        return self[name]


def _built(serving: bool) -> dict[str, Path]:
    try:
        return programs(serving=serving)
    except BuildError as why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the real cluster cannot be built: {why}")
        pytest.skip(f"the real cluster cannot be built here: {why}")


@pytest.fixture(scope="session")
def real_programs() -> dict[str, Path]:
    return _Programs(_built(serving=False))


def start_cluster(folder: Path, found: dict[str, Path], nodes: list[dict[str, Any]]) -> Iterator[LocalCluster]:
    cluster = LocalCluster(folder, found)
    _CLUSTERS.append(cluster)
    try:
        cluster.start(nodes)
        yield cluster
    finally:
        cluster.stop()
        _CLUSTERS.remove(cluster)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and _CLUSTERS:
        for cluster in _CLUSTERS:
            report.sections.append((f"real cluster {cluster.folder.name}: last log lines", cluster.last_lines()))
    if report.failed:
        for log in EXTRA_LOGS:
            lines = log.read_text(errors="replace").splitlines()[-30:] if log.is_file() else ["(no log)"]
            report.sections.append((f"{log.name}: last log lines", "\n".join(lines)))
    return report
