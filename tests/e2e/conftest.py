"""Fixtures of the end-to-end tests: the programs, a real cluster per stack, the real Pulumi.

A test that fails prints the last lines of the API server's and the scheduler's logs (and of any
process that died). Without Go these tests skip locally and fail in CI (`CI=true`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.cluster import LocalCluster
from sandbox.programs import BuildError, programs

E2E_FOLDER = Path(__file__).parent
LONGEST_FIRST = ("test_whatif_real.py", "test_whatif_lose_real.py")
"""The modules `make e2e` hands out first (`-n 2 --dist loadfile --no-loadscope-reorder`), the
longest first (about 21 and 6 minutes in a cold `.ci/run`; `--durations` prints them): a worker
that takes the what-if's rounds last ends the phase alone for most of them. The others follow as
pytest-xdist orders them by default, most tests first. `test_scale.py` (1,000 nodes, 9 minutes
alone) is not among them: beside the rounds, both ran at half speed or worse."""
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end modules in the order `LONGEST_FIRST` says, the others after them by their
    number of tests; a stable sort, so a module's tests keep their order."""
    places = [i for i, item in enumerate(items) if item.path.parent == E2E_FOLDER]
    tests = Counter(items[i].path.name for i in places)

    def rank(item: pytest.Item) -> tuple[int, int]:
        name = item.path.name
        return (LONGEST_FIRST.index(name), 0) if name in LONGEST_FIRST else (len(LONGEST_FIRST), -tests[name])

    for place, item in zip(places, sorted((items[i] for i in places), key=rank), strict=True):
        items[place] = item


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
