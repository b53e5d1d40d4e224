"""Moving Helm's release records from Secrets to ConfigMaps, for real, the way
docs/operations.md ("Helm release records") says: a chart released with Helm's default storage,
the documented kubectl and jq commands run as written, then `cluster.helmReleaseStorage:
configmap`. The provider then finds the release where the records moved (no reinstall), and
the change is an update of the provider alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import dev_nodes, e2e_config, stand_in_chart

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2erecords"
RECORD = "sh.helm.release.v1.lws.v1"


def records_config(kubeconfig: Path, chart: Path, storage: str) -> dict[str, Any]:
    raw = e2e_config("dev", kubeconfig)
    raw["lws"] = {"install": True, "chart": str(chart)}
    raw["cluster"]["helmReleaseStorage"] = storage
    return raw


def documented_move(release: str, namespace: str) -> str:
    """The docs' commands that copy a release's records into ConfigMaps, for this release."""
    docs = (PROJECT_DIR / "docs" / "operations.md").read_text()
    section = docs[docs.index("### Helm release records") :]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "the section shows the commands"
    lines = block.group(1).splitlines()
    assert lines[0].startswith("ns=volcano-system release=volcano")
    end = next(i for i, line in enumerate(lines) if line.strip().endswith("kubectl create -f -"))
    return "\n".join([f"ns={namespace} release={release}", *lines[1 : end + 1]])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("records-cluster"), real_programs, dev_nodes())


def test_records_moved_as_documented_are_found_and_the_switch_updates_only_the_provider(
    cluster: LocalCluster, real_programs: dict[str, Path]
) -> None:
    chart = stand_in_chart(cluster.folder)
    stack = PulumiStack.create(
        cluster.folder / "project", STACK, records_config(cluster.kubeconfig, chart, "secret"), real_programs
    )
    stack.up()
    assert cluster.get_json("secrets", RECORD, "-n", "lws-system")["type"] == "helm.sh/release.v1"

    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    env["PATH"] = f"{real_programs['kubectl'].parent}{os.pathsep}{env['PATH']}"
    moved = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", documented_move("lws", "lws-system")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert moved.returncode == 0, moved.stderr
    record = cluster.get_json("configmaps", RECORD, "-n", "lws-system")
    assert record["metadata"]["labels"]["owner"] == "helm" and record["metadata"]["labels"]["status"] == "deployed"

    stack.write_config(records_config(cluster.kubeconfig, chart, "configmap"))
    preview = stack.program_command("preview", "--non-interactive", "--json", check=False)
    assert preview.returncode == 0, preview.output[-4000:]
    changed = {step["urn"].rsplit("::", 1)[-1]: step["op"] for step in json.loads(preview.stdout)["steps"]
               if step["op"] != "same"}  # fmt: skip
    assert list(changed.values()) == ["update"] and "pulumi:providers:kubernetes" in next(
        step["urn"] for step in json.loads(preview.stdout)["steps"] if step["op"] == "update"
    ), changed
    stack.up()
    # A refresh reads the release from the ConfigMaps now: found there, nothing to create or change.
    refreshed = stack.preview("--refresh", "--expect-no-changes", check=False)
    assert refreshed.returncode == 0, refreshed.output[-4000:]
    revisions = cluster.get_json("configmaps", "-n", "lws-system", "-l", "owner=helm,name=lws")["items"]
    assert [r["metadata"]["name"] for r in revisions] == [RECORD], "no reinstall, no new revision"
