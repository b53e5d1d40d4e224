"""Preflight: a stack against recorded cluster dumps (committed fixtures) and against the real
kubernetes client talking to a local API server that serves the same fixtures."""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from live.cluster_state import KINDS, ClusterState, StateError, read_cluster, read_file
from live.preflight import preflight
from live.preflight.nodes import tolerates
from offline.markdown import code as code_span
from offline.render import render_stack
from tests.conftest import PROJECT_DIR, mutate, paths_of, stack_raw, write_stack

FIXTURES = PROJECT_DIR / "tests" / "fixtures" / "cluster"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["preflight", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_clean_cluster_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--stack", "aicloud-a", "--from", str(FIXTURES / "aicloud-a-fresh.yaml"))
    assert code == 0 and "Nothing found" in out and "Volcano is not installed" in out


def test_every_known_problem_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--stack", "aicloud-a", "--from", str(FIXTURES / "aicloud-a-problems.yaml"), "--json")
    assert code == 1
    findings = {(f["check"], f["subject"]): f for f in json.loads(out)["findings"]}
    assert findings[("nodes-missing", "topology")]["details"] == ["gpu-worker-128"]
    assert findings[("nodes-unplaced", "topology")]["details"] == ["gpu-worker-129"]
    assert findings[("gpus-per-node", "topology")]["details"] == ["gpu-worker-7: 4 allocatable, 8 configured"]
    assert (
        "gpu-worker-9: topology.aicloud/leaf-pair=leafpair34->leafpair12"
        in findings[("labels-change", "topology")]["details"]
    )
    for model in ("qwen2-72b-tenanta", "qwen8b-preemptor"):
        taint = findings[("taints", f"models.{model}.tolerations")]
        assert taint["severity"] == "error" and taint["details"][0].startswith("dedicated=inference:NoSchedule")
    queue = findings[("exists-unmanaged", "Queue tenantb")]
    assert "spec.weight: 5 -> 1" in queue["details"] and "tenants.tenantb.adopt: [queue]" in queue["fix"]
    assert findings[("queues-full", "tenants")]["details"] == ["tenantb: 1024 of 1024 mars-tech.com/gpu"]
    assert findings[("podgroups-pending", "models")]["details"] == ["b01/train-7b (Pending)"]
    assert ("install-elsewhere", "queues.scheduling.volcano.sh") in findings
    assert "pods that name no queue stay Pending" in findings[("default-queue", "defaultQueue")]["message"]


def test_a_resource_no_node_offers_lists_what_they_offer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = stack_raw("dev")
    raw["cluster"]["gpuResource"] = "nvidia.com/gpu"
    path = write_stack(tmp_path / "Pulumi.dev.yaml", raw)
    code, out, _ = _run(
        capsys, "--stack", "dev", "--config-file", str(path), "--from", str(FIXTURES / "aicloud-a-fresh.yaml"), "--json"
    )
    (finding,) = [f for f in json.loads(out)["findings"] if f["check"] == "resource-not-offered"]
    assert code == 1 and "mars-tech.com/gpu" in finding["fix"] and "rdma/hca_cpta" in finding["fix"]


def test_missing_nodes_suggest_the_padding_they_meant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = stack_raw("aicloud-a")
    leaves = raw["topology"]["domains"]["spinepair12"]["domains"]
    leaves["leafpair12"]["nodes"] = ["gpu-worker-[01-64]"]
    path = write_stack(tmp_path / "Pulumi.aicloud-a.yaml", raw)
    code, out, _ = _run(
        capsys,
        "--stack",
        "aicloud-a",
        "--config-file",
        str(path),
        "--from",
        str(FIXTURES / "aicloud-a-fresh.yaml"),
        "--json",
    )
    (missing,) = [f for f in json.loads(out)["findings"] if f["check"] == "nodes-missing"]
    assert code == 1 and "gpu-worker-01 (did you mean gpu-worker-1?)" in missing["details"]


def test_an_unreadable_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "--stack", "aicloud-a", "--from", str(FIXTURES / "broken.yaml"))
    assert code == 2 and "is not a Kubernetes List" in err and "kubectl get nodes" in err
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = _run(capsys, "--stack", "aicloud-a", "--from", str(tmp_path / "bad.json"))
    assert code == 2 and "neither JSON nor YAML" in err
    code, _, err = _run(capsys, "--stack", "aicloud-a", "--from", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_an_invalid_stack_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_stack(
        tmp_path / "Pulumi.x.yaml", mutate(stack_raw("dev"), lambda r: r["cluster"].update(gpusPerNode=0))
    )
    code, _, err = _run(
        capsys, "--stack", "x", "--config-file", str(path), "--from", str(FIXTURES / "aicloud-a-fresh.yaml")
    )
    assert code == 2 and "cluster.gpusPerNode" in err


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}, True),
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "dedicated", "operator": "Equal", "value": "training"}, False),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_toleration_matching(toleration: dict[str, Any], tolerated: bool) -> None:
    taint = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
    assert tolerates([toleration], taint) is tolerated


def test_a_tolerated_taint_is_no_finding(render_raw: Any) -> None:
    raw = mutate(
        stack_raw("aicloud-a"),
        lambda r: r["modelDefaults"].update(
            tolerations=[{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}]
        ),
    )
    report = preflight(render_raw(raw).spec, render_raw(raw).rendered, read_file(FIXTURES / "aicloud-a-problems.yaml"))
    assert not [f for f in report.findings if f.check == "taints"]


# -- adoption -----------------------------------------------------------------------------------------


def _adopting() -> dict[str, Any]:
    raw = stack_raw("aicloud-a")
    raw["tenants"]["tenanta"]["adopt"] = ["namespaces", "queue"]
    raw["priorityClasses"] = {"p0-critical": {"value": 1000000, "adopt": True}}
    raw["models"]["qwen8b-preemptor"]["adopt"] = ["workload"]
    raw["models"]["qwen2-72b-tenanta"]["adopt"] = ["workload", "service"]
    raw["volcano"]["adopt"] = True
    raw["lws"]["adopt"] = True
    return raw


def test_adopted_objects_are_imported_not_created(render_raw: Any, tmp_path: Path) -> None:
    from offline.render import write_render
    from offline.review import diff_dirs

    result = render_raw(_adopting())
    imports = {e["urn"].split("::")[-1]: e["import"] for e in result.rendered.index if e.get("import")}
    assert imports == {
        "tenants-namespace-a01": "a01",
        "tenants-queue-tenanta": "tenanta",
        "priority-p0-critical": "p0-critical",
        "model-qwen8b-preemptor-deployment": "a01/qwen8b-preemptor",
        "model-qwen2-72b-tenanta-lws": "a01/qwen2-72b-tenanta",
        "model-qwen2-72b-tenanta-service": "a01/qwen2-72b-leader",
        "volcano-namespace": "volcano-system",
        "volcano-release": "volcano-system/volcano",
        "lws-namespace": "lws-system",
        "lws-release": "lws-system/lws",
    }
    empty = tmp_path / "empty"
    empty.mkdir()
    write_render(result, tmp_path / "new")
    diff, _ = diff_dirs(empty, tmp_path / "new")
    assert "manifests/Queue.tenanta.yaml" in diff.imported and "manifests/Queue.tenanta.yaml" not in diff.added
    assert "## Adopted objects" in (tmp_path / "new" / "summary.md").read_text()


def test_removing_adopt_after_the_import_changes_only_the_force_annotation(render_raw: Any, tmp_path: Path) -> None:
    """Once imported, an object is in the stack's state and its import ID is ignored, so dropping
    `adopt` is no addition and no replacement: only the `pulumi.com/patchForce` annotation the
    adoption set goes."""
    from offline.render import write_render
    from offline.review import diff_dirs

    adopting = _adopting()
    settled = copy.deepcopy(adopting)
    for section in (settled["tenants"]["tenanta"], settled["models"]["qwen8b-preemptor"]):
        del section["adopt"]
    for section in (settled["priorityClasses"]["p0-critical"], settled["models"]["qwen2-72b-tenanta"]):
        del section["adopt"]
    del settled["volcano"]["adopt"], settled["lws"]["adopt"]
    write_render(render_raw(adopting), tmp_path / "adopting")
    write_render(render_raw(settled), tmp_path / "settled")
    result, text = diff_dirs(tmp_path / "adopting", tmp_path / "settled")
    assert not (result.added or result.replaced or result.removed or result.imported), result
    changed = [line for line in text.splitlines() if line.startswith(("+ ", "- "))]
    assert changed and all("pulumi.com/patchForce" in line or line.endswith("annotations:") for line in changed)


def test_preflight_of_an_adoption_lists_what_the_import_will_update(render_raw: Any) -> None:
    result = render_raw(_adopting())
    report = preflight(result.spec, result.rendered, read_file(FIXTURES / "aicloud-a-handbuilt.yaml"))
    findings = {(f.check, f.subject): f for f in report.findings}
    assert not [f for f in report.findings if f.check in ("install-unmanaged", "exists-unmanaged")]
    queue = findings[("adopt-updates", "Queue tenanta")]
    assert queue.severity == "warning"
    assert "spec.weight: 1 -> 2 (owned by kubectl-client-side-apply)" in queue.details
    assert "spec.reclaimable: true -> false (owned by kubectl-client-side-apply)" in queue.details
    assert "Queue tenanta" in next(note for note in report.notes if "will be adopted" in note)
    assert any("release `volcano-system/volcano` and its namespace will be adopted" in n for n in report.notes)


def test_adopted_objects_force_their_apply_even_in_a_preview(render_raw: Any) -> None:
    result = render_raw(_adopting())
    queue = result.rendered.find("Queue", "tenanta").manifest
    assert queue["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
    namespace = result.rendered.find("Namespace", "a01").manifest
    assert namespace["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
    # A namespace not adopted is applied without force (tenant Queues always force: the queue
    # controller co-owns `spec.parent`).
    plain = render_raw(stack_raw("aicloud-a")).rendered.find("Namespace", "a01").manifest
    assert "pulumi.com/patchForce" not in (plain["metadata"].get("annotations") or {})


def test_fields_of_a_manager_the_provider_does_not_take_over_are_an_error(render_raw: Any) -> None:
    result = render_raw(_adopting())
    state = read_file(FIXTURES / "aicloud-a-handbuilt.yaml")
    queue = state.find("Queue", "tenanta")
    assert queue is not None
    queue["metadata"]["managedFields"][0]["manager"] = "argocd-controller"
    report = preflight(result.spec, result.rendered, state)
    (finding,) = [f for f in report.findings if f.check == "adopt-foreign-manager"]
    assert finding.severity == "error" and "`argocd-controller`" in finding.message
    assert "spec.weight: 1 -> 2 (owned by argocd-controller)" in finding.details


def test_an_adoption_that_needs_a_replacement_is_an_error(render_raw: Any) -> None:
    """The hand-made Deployment selects its pods by `app: qwen8b`; a selector cannot change,
    and Pulumi refuses to replace what it imports, so `pulumi up` would fail half-way."""
    result = render_raw(_adopting())
    report = preflight(result.spec, result.rendered, read_file(FIXTURES / "aicloud-a-handbuilt.yaml"))
    (finding,) = [f for f in report.findings if f.check == "adopt-replaces"]
    assert finding.subject == "Deployment a01/qwen8b-preemptor" and finding.severity == "error"
    assert finding.details[0].startswith('spec.selector: {"matchLabels": {"app": "qwen8b"}} -> ')
    assert "Deployment a01/qwen8b-preemptor" not in next(n for n in report.notes if "will be adopted" in n)


def test_adopting_what_does_not_exist_is_an_error(render_raw: Any) -> None:
    result = render_raw(_adopting())
    report = preflight(result.spec, result.rendered, read_file(FIXTURES / "aicloud-a-fresh.yaml"))
    assert {f.subject for f in report.findings if f.check == "adopt-missing"} >= {"Queue tenanta", "Namespace a01"}


# -- the real client against a local API server ----------------------------------------------------------


class _ApiServer(ThreadingHTTPServer):
    state: ClusterState
    requests: list[tuple[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _ApiServer

    def log_message(self, *args: Any) -> None:  # keep the test output quiet
        pass

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.requests.append(("GET", self.path))
        path = self.path.split("?", 1)[0]
        for kind in KINDS:
            prefix = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
            if path == f"{prefix}/{kind.plural}":
                installed = not kind.group.endswith(("volcano.sh", "x-k8s.io")) or self.server.state.crd(
                    f"{kind.plural}.{kind.group}"
                )
                if not installed:
                    self._reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})
                    return
                items = getattr(self.server.state, kind.key)
                self._reply(200, {"apiVersion": "v1", "kind": f"{kind.kind}List", "metadata": {}, "items": items})
                return
        self._reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})

    def _refuse(self) -> None:
        self.server.requests.append((self.command, self.path))
        self._reply(405, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 405})

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse  # noqa: N815 (http.server's method names)


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[tuple[_ApiServer, Path]]:
    server = _ApiServer(("127.0.0.1", 0), _Handler)
    server.state = read_file(FIXTURES / "aicloud-a-problems.yaml")
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
                "users": [{"name": "reader", "user": {"token": "read-only"}}],
                "contexts": [{"name": "fixture", "context": {"cluster": "local", "user": "reader"}}],
                "current-context": "fixture",
            }
        )
    )
    yield server, kubeconfig
    server.shutdown()
    thread.join()


def test_the_real_client_reads_the_same_state_with_gets_only(api_server: tuple[_ApiServer, Path]) -> None:
    server, kubeconfig = api_server
    live = read_cluster(str(kubeconfig), "fixture")
    recorded = server.state
    for kind in KINDS:
        assert len(getattr(live, kind.key)) == len(getattr(recorded, kind.key)), kind.kind
    assert {m for m, _ in server.requests} == {"GET"}
    assert any(path.startswith("/apis/scheduling.volcano.sh/v1beta1/queues") for _, path in server.requests)
    result = render_stack(PROJECT_DIR, "aicloud-a")
    from_file = preflight(result.spec, result.rendered, recorded)
    from_api = preflight(result.spec, result.rendered, live)
    assert [(f.check, f.subject, f.details) for f in from_api.findings] == [
        (f.check, f.subject, f.details) for f in from_file.findings
    ]


def test_the_cli_reads_the_live_cluster(
    api_server: tuple[_ApiServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, kubeconfig = api_server
    code, out, _ = _run(capsys, "--stack", "aicloud-a", "--kubeconfig", str(kubeconfig), "--context", "fixture")
    assert code == 1 and "gpu-worker-128" in out and "the cluster of context `fixture`" in out


def test_an_unreachable_cluster_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    with pytest.raises(StateError, match="cannot reach the API server"):
        read_cluster(str(kubeconfig), None)
    code, _, err = _run(capsys, "--stack", "aicloud-a", "--kubeconfig", str(kubeconfig))
    assert code == 2 and "cannot reach the API server" in err


def test_labels_the_stack_does_not_own_are_compared_with_its_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = mutate(stack_raw("aicloud-a"), lambda r: r["topology"].update(nodeLabels={"enabled": False}))
    path = write_stack(tmp_path / "Pulumi.aicloud-a.yaml", raw)
    code, out, _ = _run(
        capsys,
        "--stack",
        "aicloud-a",
        "--config-file",
        str(path),
        "--from",
        str(FIXTURES / "aicloud-a-problems.yaml"),
        "--json",
    )
    findings = {(f["check"], f["subject"]): f for f in json.loads(out)["findings"]}
    assert code == 1 and ("labels-change", "topology") not in findings
    disagree = findings[("labels-disagree", "topology")]
    assert disagree["severity"] == "error"
    assert "gpu-worker-9: topology.aicloud/leaf-pair=leafpair34->leafpair12" in disagree["details"]
    assert "label patches" not in findings[("nodes-missing", "topology")]["message"]


def test_unowned_labels_register_nothing_per_node(render_raw: Any) -> None:
    raw = mutate(stack_raw("aicloud-a"), lambda r: r["topology"].update(nodeLabels={"enabled": False}))
    result = render_raw(raw)
    assert not [o for o in result.rendered.objects if o.kind == "Node"]
    owned = render_raw(stack_raw("aicloud-a"))
    assert len(owned.rendered.index) - len(result.rendered.index) == 128, "one NodePatch per node, nothing else"


def test_an_older_volcano_is_adopted_at_its_version_first_as_advised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = str(FIXTURES / "aicloud-a-volcano-1.13.yaml")
    adopting = mutate(stack_raw("aicloud-a"), lambda r: r["volcano"].update(adopt=True))
    code, out, _ = _run(
        capsys,
        "--stack",
        "x",
        "--config-file",
        str(write_stack(tmp_path / "Pulumi.x.yaml", adopting)),
        "--from",
        dump,
        "--json",
    )
    (finding,) = [f for f in json.loads(out)["findings"] if f["check"] == "volcano-version"]
    assert "set `volcano.version: 1.13.0` in the change that adopts Volcano" in finding["fix"]
    # Following the advice: the running version, without what 1.13 lacks (multi-node models).
    at_running = mutate(
        adopting, lambda r: (r["volcano"].update(version="1.13.0"), r["models"].pop("qwen2-72b-tenanta"))
    )
    with_gang = mutate(adopting, lambda r: r["volcano"].update(version="1.13.0"))
    assert "volcano.version" in paths_of(with_gang), "what 1.13 lacks is refused by key path"
    path = write_stack(tmp_path / "Pulumi.y.yaml", at_running)
    code, out, _ = _run(capsys, "--stack", "y", "--config-file", str(path), "--from", dump, "--json")
    assert code in (0, 1) and not [f for f in json.loads(out)["findings"] if f["check"] == "volcano-version"]
    assert main(["render", "--stack", "y", "--config-file", str(path), "--out", str(tmp_path / "out")]) == 0


def test_volcano_installed_elsewhere_is_not_an_unmanaged_install_and_must_exist(render_raw: Any) -> None:
    result = render_raw(mutate(stack_raw("aicloud-a"), lambda r: r.update(volcano={"install": False})))
    installed = preflight(result.spec, result.rendered, read_file(FIXTURES / "aicloud-a-handbuilt.yaml"))
    assert not [f for f in installed.findings if f.check == "install-unmanaged" and "volcano" in f.subject]
    fresh = preflight(result.spec, result.rendered, read_file(FIXTURES / "aicloud-a-fresh.yaml"))
    (missing,) = [f for f in fresh.findings if f.check == "volcano-missing"]
    assert missing.severity == "error" and missing.subject == "volcano.install"


def _hyper_node(name: str, tier: int, members: list[str], kind: str, discovered: bool = True) -> dict[str, Any]:
    labels = {"volcano.sh/network-topology-source": "label"} if discovered else {}
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": labels},
        "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members]},
    }


def test_a_hypernode_with_two_parents_names_the_duplicate_to_delete() -> None:
    """What Volcano v1.15.1's label discovery left on the e2e cluster: two tier-2 HyperNodes over
    the same two leaves. Its next run keeps the first by name, so the other is the one to delete."""
    from live.preflight.hypernodes import check_hypernode_parents
    from live.preflight.report import Report

    state = ClusterState(
        source="test",
        hyper_nodes=[
            _hyper_node("leaf-a", 1, ["n1"], "Node"),
            _hyper_node("leaf-b", 1, ["n2"], "Node"),
            _hyper_node("spine-7zwfv", 2, ["leaf-a", "leaf-b"], "HyperNode"),
            _hyper_node("spine-5c6sk", 2, ["leaf-a", "leaf-b"], "HyperNode"),
        ],
    )
    report = Report("s", "test")
    check_hypernode_parents(state, report)
    assert [(f.check, f.subject) for f in report.findings] == [
        ("hypernode-two-parents", "HyperNode leaf-a"),
        ("hypernode-two-parents", "HyperNode leaf-b"),
    ]
    assert "`kubectl delete hypernode spine-7zwfv`" in report.findings[0].fix
    assert "delete hypernode spine-5c6sk" not in report.findings[0].fix

    state.hyper_nodes[3] = _hyper_node("spine-5c6sk", 2, ["leaf-b"], "HyperNode", discovered=False)
    report = Report("s", "test")
    check_hypernode_parents(state, report)
    assert [f.subject for f in report.findings] == ["HyperNode leaf-b"]
    assert "remove it from the others" in report.findings[0].fix


def test_a_cluster_that_stops_answering_ends_the_read_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every LIST has a read timeout: an API server that accepts and then says nothing ends the
    command with exit 2's message, never holds it."""
    import socket
    import time

    import live.cluster_state

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{silent.getsockname()[1]}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    monkeypatch.setattr(live.cluster_state, "LIST_TIMEOUT", (1, 1))
    started = time.monotonic()
    try:
        with pytest.raises(StateError, match="cannot reach the API server"):
            read_cluster(str(kubeconfig), None)
    finally:
        silent.close()
    assert time.monotonic() - started < 30


def test_a_dump_of_yaml_aliases_or_beyond_the_size_bound_exits_2_unread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nine levels of nine aliases expand to billions of values: refused from the event stream,
    before one value is built (the fixtures' PyYAML anchors, a few shared label maps, are read)."""
    levels = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i > 1 else '*a'] * 9)}]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join([*levels, "kind: List", "items: [{kind: Node, metadata: {name: n, labels: {x: *l8}}}]"]))
    code, _, err = _run(capsys, "--stack", "aicloud-a", "--from", str(bomb))
    assert code == 2 and "expand to more than 2,000,000 values" in err
    import live.cluster_state

    monkeypatch.setattr(live.cluster_state, "MAX_DUMP_BYTES", 1000)
    code, _, err = _run(capsys, "--stack", "aicloud-a", "--from", str(FIXTURES / "aicloud-a-fresh.yaml"))
    assert code == 2 and "more than the 1,000 a dump may be" in err


@pytest.mark.parametrize(
    ("dump", "kind", "field", "value"),
    [
        ("aicloud-a-problems.yaml", "Queue", ("status", "state"), "``Closed`` <img src=x onerror=alert(1)>"),
        (
            "whatif/aicloud-a-preempt.yaml",
            "Deployment",
            ("spec", "template", "spec", "containers", 0, "image"),
            "volcano:`x` <img src=x>",
        ),
    ],
)
def test_cluster_strings_in_the_markdown_report_stay_inside_their_code_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dump: str, kind: str, field: tuple[Any, ...], value: str
) -> None:
    """A string read from the cluster (the default queue's state, the scheduler's image) is shown as
    a code span that nothing in it can close, so a backtick run or HTML in it is shown as text in a
    pull-request comment, never rendered."""
    data = yaml.safe_load((FIXTURES / dump).read_text())
    target = next(
        o for o in data["items"] if o["kind"] == kind and o["metadata"]["name"] in ("default", "volcano-scheduler")
    )
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    written = tmp_path / "cluster.json"
    written.write_text(json.dumps(data))
    _, out, _ = _run(capsys, "--stack", "aicloud-a", "--from", str(written))
    assert code_span(value) in out, out
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", out)  # every code span taken out
    assert "<img" not in outside and "Closed" not in outside, outside


def test_on_a_later_run_the_stacks_own_objects_are_not_taken_for_someone_elses(render_raw: Any) -> None:
    """After the first `up` every object the stack made exists, with its label, and a Service has
    the `clusterIP` the API server gave it (an immutable field the stack does not set): neither is
    an object in the way, and nothing would be replaced."""
    result = render_raw(stack_raw("dev"))
    state = read_file(FIXTURES / "aicloud-a-fresh.yaml")
    state.nodes = []
    service = copy.deepcopy(result.rendered.find("Service", "qwen3-0-6b", "team-a").manifest)
    service["spec"]["clusterIP"] = "10.96.0.245"
    state.services = [service]
    # PriorityClasses read back without `globalDefault: false` (the API server omits it).
    classes = [copy.deepcopy(o.manifest) for o in result.rendered.objects if o.kind == "PriorityClass"]
    assert classes and all(c["globalDefault"] is False for c in classes)
    state.priority_classes = [{k: v for k, v in c.items() if k != "globalDefault"} for c in classes]
    report = preflight(result.spec, result.rendered, state)
    assert not [f for f in report.findings if f.subject == "Service team-a/qwen3-0-6b"], report.findings
    assert not [f for f in report.findings if f.subject.startswith("PriorityClass")], report.findings
    # The same Service made by someone else is in the way, for what it is: not for its clusterIP.
    del service["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    (finding,) = [f for f in preflight(result.spec, result.rendered, state).findings if f.check == "exists-unmanaged"]
    assert finding.subject == "Service team-a/qwen3-0-6b" and "AlreadyExists" in finding.message
