"""`snapshot`: the recorded cluster a pull request's what-if reads holds only the fields the
what-if reads (an allow-list per kind), and answers the what-if as the full dump does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from live.cluster_snapshot import ALL, KEPT
from tests.conftest import PROJECT_DIR
from tests.whatif.test_volcano_engine import volcano_engine

DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"
DUMP = DUMPS / "aicloud-a-preempt.yaml"
CANARY = "CANARY"


QUANTITIES = frozenset(
    {"allocatable", "allocated", "capacity", "requests", "limits", "capability", "deserved", "resource", "minResources"}
)
"""Mappings of quantities, which a dump must keep parseable: no canary there."""
PLANTED: dict[str, tuple[str, ...]] = {}
"""Canary -> the path of the mapping it was planted in."""


def _plant(node: Any, path: tuple[str, ...]) -> None:
    """A canary key in every mapping of an object, at every depth."""
    if isinstance(node, dict):
        for key, value in list(node.items()):
            _plant(value, (*path, key))
        if not path or path[-1] not in QUANTITIES:
            canary = f"{CANARY}-{len(PLANTED)}"
            PLANTED[canary] = path
            node["zz-canary"] = canary
    elif isinstance(node, list):
        for item in node:
            _plant(item, (*path, "[]"))


def _sensitive(item: dict[str, Any]) -> None:
    """What workloads hold in plain text and the what-if never reads, in fields the kinds have."""
    metadata = item["metadata"]
    metadata["managedFields"] = [{"manager": CANARY, "operation": "Apply"}]
    metadata.setdefault("annotations", {}).update(
        {"kubectl.kubernetes.io/last-applied-configuration": CANARY, "team.example.com/pager": CANARY}
    )
    if item["kind"] != "Pod":
        return
    spec = item["spec"]
    for container in spec.get("containers", []):
        container.update(
            command=[CANARY],
            args=[f"--api-key={CANARY}"],
            env=[{"name": "K", "value": CANARY}],
            envFrom=[{"secretRef": {"name": CANARY}}],
            workingDir=f"/{CANARY}",
            volumeMounts=[{"name": "w", "mountPath": f"/{CANARY}"}],
            readinessProbe={"httpGet": {"path": "/", "port": 80, "httpHeaders": [{"name": "X", "value": CANARY}]}},
            lifecycle={"preStop": {"exec": {"command": [CANARY]}}},
            securityContext={"runAsUser": 0, "seLinuxOptions": {"user": CANARY}},
        )
    spec["ephemeralContainers"] = [{"name": "debug", "image": "busybox", "env": [{"name": "K", "value": CANARY}]}]
    spec["volumes"] = [
        {"name": "s", "secret": {"secretName": CANARY}},
        {"name": "h", "hostPath": {"path": f"/{CANARY}"}},
        {"name": "n", "nfs": {"server": CANARY, "path": "/"}},
        {"name": "c", "persistentVolumeClaim": {"claimName": "weights"}},
    ]
    spec.update(serviceAccountName=CANARY, imagePullSecrets=[{"name": CANARY}], hostname=CANARY)
    item.setdefault("status", {}).update(podIP="10.0.0.9", message=CANARY)


def _whole_kept(kind: str, path: tuple[str, ...]) -> bool:
    """Whether the allow-list keeps the subtree at `path` whole (a canary there is kept on purpose)."""
    keep: Any = KEPT.get(kind)
    for part in path:
        if keep is ALL:
            return True
        if isinstance(keep, list):
            if part != "[]":
                return False
            keep = keep[0]
            continue
        if not isinstance(keep, dict) or part not in keep:
            return False
        keep = keep[part]
    return keep is ALL


def _snapshot(tmp_path: Path, data: dict[str, Any]) -> dict[str, Any]:
    source = tmp_path / "cluster.yaml"
    source.write_text(yaml.safe_dump(data))
    out = tmp_path / "snapshot.json"
    assert main(["snapshot", "--stack", "aicloud-a", "--from", str(source), "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_only_the_fields_the_what_if_reads_leave_the_cluster(tmp_path: Path) -> None:
    data = yaml.safe_load(DUMP.read_text())
    extra = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "a01"}, "spec": {"x": CANARY}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a01", "labels": {"owner": CANARY}}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "app", "namespace": "a01"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "K", "value": CANARY}]}]}}},
        },
    ]
    data["items"] += extra
    for item in data["items"]:
        _sensitive(item)
        _plant(item, ())
    recorded = _snapshot(tmp_path, data)

    kinds = {item["kind"] for item in recorded["items"]}
    assert kinds <= set(KEPT) and {"Node", "Pod", "PodGroup", "Queue", "PriorityClass"} <= kinds
    survivors: list[str] = []

    def walk(node: Any, kind: str) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value, kind)
        elif isinstance(node, list):
            for value in node:
                walk(value, kind)
        elif isinstance(node, str) and CANARY in node:
            survivors.append(f"{kind}:{node}")

    for item in recorded["items"]:
        walk(item, item["kind"])
    # A planted key survives only inside a subtree the allow-list keeps whole.
    for survivor in survivors:
        kind, _, planted = survivor.partition(":")
        assert planted in PLANTED, f"a field that is not kept whole leaked: {survivor}"
        assert _whole_kept(kind, PLANTED[planted]), f"{survivor} ({PLANTED[planted]}) is outside every field read"
    assert len(PLANTED) > len(survivors) > 0, "canaries were planted, some in fields kept whole"
    text = json.dumps(recorded)
    for leaked in ("managedFields", "last-applied-configuration", "pager", "ephemeralContainers", "10.0.0.9"):
        assert leaked not in text
    pod = next(i for i in recorded["items"] if i["kind"] == "Pod")
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["s", "h", "n", "c"]
    assert pod["spec"]["volumes"][3]["persistentVolumeClaim"]["claimName"] == "weights"
    assert all("resources" in c for c in pod["spec"]["containers"])


@pytest.mark.parametrize("engine", ["model", "volcano"])
@pytest.mark.parametrize("dump", sorted(p.name for p in DUMPS.glob("aicloud-a-*.yaml")))
def test_the_what_if_answers_the_same_on_the_snapshot(
    dump: str, engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both engines, Volcano's own code included (it reads whole objects), decide alike on the
    snapshot and on the dump it was taken from."""
    if engine == "volcano":
        volcano_engine()
    source = DUMPS / dump
    out = tmp_path / "aicloud-a.json"
    assert main(["snapshot", "--stack", "aicloud-a", "--from", str(source), "--out", str(out)]) == 0
    capsys.readouterr()
    answers = []
    for recorded in (source, out):
        main(["whatif", "--stack", "aicloud-a", "--from", str(recorded), "--engine", engine, "--json"])
        models = json.loads(capsys.readouterr().out)["models"]
        answers.append({m["model"]: (m["verdict"], m.get("victims")) for m in models})
    assert answers[0] == answers[1]


def test_the_snapshot_what_if_is_not_vacuous(capsys: pytest.CaptureFixture[str]) -> None:
    main(["whatif", "--stack", "aicloud-a", "--from", str(DUMP), "--engine", "model", "--json"])
    assert any(m["verdict"] != "fits" for m in json.loads(capsys.readouterr().out)["models"])
