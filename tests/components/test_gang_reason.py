"""What a failed `pulumi up` says about a gang that did not start: the PodGroup's state as Volcano
wrote it, read with the stack's own cluster access (the real read is in tests/e2e/test_unfit_model.py)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from components.inference.gang_reason import ClusterAccess, gang_failure_message, podgroup_state, read_podgroup

WAITING = {
    "metadata": {"name": "wide", "namespace": "team-a"},
    "status": {
        "phase": "Pending",
        "conditions": [
            {"type": "Scheduled", "status": "False", "reason": "tasks in gang are ready to be scheduled"},
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable",
            },
        ],
    },
}


def test_the_state_says_the_phase_and_the_conditions_that_hold() -> None:
    said = podgroup_state(WAITING)
    assert said == (
        "phase Pending; Unschedulable (NotEnoughResources): 4/4 tasks in gang unschedulable: "
        "pod group is not ready, 4 Pending, 4 minAvailable"
    )
    assert podgroup_state({}) == "phase unset"


def test_a_long_message_is_cut() -> None:
    long = {"status": {"conditions": [{"type": "Unschedulable", "status": "True", "message": "x" * 5000}]}}
    assert len(podgroup_state(long)) < 700 and podgroup_state(long).endswith("…")


def test_the_message_names_the_podgroup_and_explain_or_how_to_read_it() -> None:
    read = gang_failure_message("wide", "team-a", "wide", "phase Pending", "wide", "lab")
    assert "LeaderWorkerSet team-a/wide" in read and "PodGroup team-a/wide: phase Pending" in read
    assert "`volcano-platform explain wide --stack lab`" in read
    unread = gang_failure_message("m-s0-decode", "team-b", "m-s0", None, "m", "lab")
    assert "`kubectl get podgroups.scheduling.volcano.sh m-s0 -n team-b -o yaml`" in unread


@pytest.fixture
def fake_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kubectl that records its arguments and the kubeconfig it was given, and prints WAITING."""
    record = tmp_path / "calls.json"
    script = tmp_path / "bin" / "kubectl"
    script.parent.mkdir()
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "config = args[args.index('--kubeconfig') + 1] if '--kubeconfig' in args else None\n"
        f"json.dump({{'args': args, 'config': open(config).read() if config else None}}, open({str(record)!r}, 'w'))\n"
        f"print({json.dumps(json.dumps(WAITING))})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return record


def test_kubeconfig_contents_reach_kubectl_through_a_file_gone_after(fake_kubectl: Path) -> None:
    contents = "apiVersion: v1\nkind: Config\n"
    said = read_podgroup(ClusterAccess(contents, "lab"), "team-a", "wide")
    assert said is not None and said.startswith("phase Pending; Unschedulable")
    call = json.loads(fake_kubectl.read_text())
    assert call["config"] == contents
    assert call["args"][2:] == [
        "--context",
        "lab",
        "get",
        "podgroups.scheduling.volcano.sh",
        "wide",
        "-n",
        "team-a",
        "-o",
        "json",
    ]
    assert not Path(call["args"][1]).exists()


def test_a_kubeconfig_path_is_passed_as_it_is(fake_kubectl: Path, tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\n")
    read_podgroup(ClusterAccess(str(path)), "team-a", "wide")
    assert json.loads(fake_kubectl.read_text())["args"][:2] == ["--kubeconfig", str(path)]


def test_without_kubectl_nothing_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert read_podgroup(ClusterAccess(), "team-a", "wide") is None
