"""The upstream schemas ship with the project: byte-identical to their tags, the only schemas read,
and every version a stack pins must be vendored."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from config.upstream.vendored import (
    GATEWAY_API,
    GATEWAY_API_INFERENCE_EXTENSION,
    LWS,
    PROMETHEUS_ENGINE,
    UPSTREAM_DIR,
    VOLCANO,
    fetch_command,
    newest_vendored,
    vendored_versions,
)
from config.upstream.volcano import FLOOR_DEQUEUE_STRATEGY, FLOOR_TIER_NAMES
from offline.check import check_render
from offline.manifests import RenderedObject
from offline.schemas import validate_objects, validate_project_file
from tests.conftest import PROJECT_DIR, STACKS, load, mutate, problems_of, stack_raw

# `<project>-<version>/` folders (upstream/generate/ is the generator of two of them, no copy).
FOLDERS = sorted(p for p in UPSTREAM_DIR.iterdir() if p.is_dir() and re.search(r"-\d+\.\d+\.\d+$", p.name))


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_vendored_files_are_byte_identical_to_their_tags(folder: Path) -> None:
    """Every file is listed in SOURCE with the git blob id it has at the tag; LICENSE is there."""
    source = (folder / "SOURCE").read_text()
    assert re.search(r"tag v?\d+\.\d+\.\d+ \(commit [0-9a-f]{40}", source)
    listed = dict(re.findall(r"^(\S+)  <- \S+  \(blob ([0-9a-f]{40})\)$", source, re.M))
    files = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} - {"SOURCE"}
    assert "LICENSE" in files and files == set(listed)
    for name, blob in listed.items():
        assert _git_blob_id((folder / name).read_bytes()) == blob, name


def test_the_default_versions_are_vendored() -> None:
    spec = load(stack_raw("dev"))
    assert spec.config.volcano.version in vendored_versions(VOLCANO)
    assert spec.config.lws.version in vendored_versions(LWS)


def test_nothing_reads_schemas_from_outside_the_project() -> None:
    """A user's clone has nothing beside it: no code, script or workflow may point outside the
    project for schemas. (The needles are built here so that this file does not match itself.)"""
    needles = (
        "/".join(("..", "shared")),
        "/".join(("shared", "upstream")),
        "_".join(("VOLCANO", "PLATFORM", "UPSTREAM")),
    )
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_DIR, capture_output=True, text=True, check=True
    ).stdout.split()
    readers = [
        PROJECT_DIR / path
        for path in tracked
        if path.endswith((".py", ".sh", ".yml", ".cjs", ".toml", ".json")) or path in ("Makefile", ".ci/run")
    ]
    assert len(readers) > 100
    for path in readers:
        if path.suffix == ".json" and "upstream" in path.parts:
            continue  # vendored upstream files, verbatim
        text = path.read_text()
        assert not any(needle in text for needle in needles), path


@pytest.mark.parametrize("stack", STACKS)
def test_check_validates_every_object_of_every_stack(stack: str, committed_render: Any) -> None:
    report = check_render(committed_render(stack))
    assert report.errors == [] and report.warnings == [str(w) for w in committed_render(stack).spec.warnings]
    objects = len(committed_render(stack).rendered.objects)
    assert report.notes[0] == f"{objects} object(s) validated against Kubernetes 1.33 and the vendored upstream CRDs"


@pytest.mark.slow
def test_check_cli_prints_no_skipped_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--stack", "aicloud-a"]) == 0
    out = capsys.readouterr().out
    assert "skipped" not in out and "check passed" in out


def test_an_unvendored_chart_version_is_a_config_error_naming_the_command() -> None:
    raw = mutate(stack_raw("aicloud-a"), lambda r: r["volcano"].update(version="1.16.0"))
    raw["lws"]["version"] = "0.11.0"
    found = {p.path: str(p) for p in problems_of(raw)}
    assert "make upstream VOLCANO=1.16.0" in found["volcano.version"]
    assert "make upstream LWS=0.11.0" in found["lws.version"]


def test_a_rendered_kind_without_a_vendored_crd_is_an_error() -> None:
    stray = RenderedObject(
        "u",
        "t",
        "manifests/Widget.x.yaml",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}},
    )
    (issue,) = validate_objects([stray], "1.33").issues
    assert "no vendored CRD defines example.com/v1 Widget" in issue.message
    lws = RenderedObject(
        "u",
        "t",
        "manifests/LeaderWorkerSet.x.yaml",
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "x"}, "spec": {}},
    )
    (issue,) = validate_objects([lws], "1.33", {"lws 0.11.0": None}).issues
    assert "not vendored: `lws 0.11.0`: `make upstream LWS=0.11.0`" in issue.message


def test_the_upstream_folders_are_all_vendored_copies_or_the_generator() -> None:
    others = {p.name for p in UPSTREAM_DIR.iterdir() if p.is_dir()} - {p.name for p in FOLDERS}
    assert others == {"generate"}


@pytest.mark.parametrize("project", [GATEWAY_API, GATEWAY_API_INFERENCE_EXTENSION, PROMETHEUS_ENGINE])
def test_the_generated_crds_are_what_upstream_ships(project: str) -> None:
    """upstream/generate/build.sh ran the project's own generator and compared each file with the
    one its module ships; SOURCE says the result."""
    newest = newest_vendored(project)
    assert newest is not None
    source = (newest[1] / "SOURCE").read_text()
    assert source.startswith("Generated from the Go module ") and "upstream/generate/build.sh" in source
    crds = sorted(p.name for p in (newest[1] / "crd").iterdir())
    assert crds and all(f"  {name}: byte-identical\n" in source for name in crds), source
    assert "DIFFERS" not in source.replace("controller-gen crd` alone: DIFFERS", "")
    assert fetch_command(project, newest[0]) == "make upstream-generated"


def _obj(manifest: dict[str, Any]) -> RenderedObject:
    return RenderedObject("u", "t", f"manifests/{manifest['kind']}.x.yaml", manifest)


INFERENCE_POOL: dict[str, Any] = {
    "apiVersion": "inference.networking.k8s.io/v1",
    "kind": "InferencePool",
    "metadata": {"name": "llama", "namespace": "team-a"},
    "spec": {
        "selector": {"matchLabels": {"app": "llama"}},
        "targetPorts": [{"number": 8000}],
        "endpointPickerRef": {
            "kind": "Service",
            "name": "llama-epp",
            "port": {"number": 9002},
            "failureMode": "FailOpen",
        },
    },
}


def test_an_inference_pool_is_validated_against_the_generated_crd() -> None:
    """inference.networking.k8s.io ends in `.k8s.io` like Kubernetes' own groups, yet a CRD
    defines it: the vendored CRD checks it, not a built-in schema."""
    assert validate_objects([_obj(INFERENCE_POOL)], "1.33").issues == []
    too_many = mutate(INFERENCE_POOL, lambda m: m["spec"].update(targetPorts=[{"number": 8000 + i} for i in range(9)]))
    (issue,) = validate_objects([_obj(too_many)], "1.33").issues
    assert issue.path == "spec.targetPorts" and "is too long" in issue.message
    maybe = mutate(INFERENCE_POOL, lambda m: m["spec"]["endpointPickerRef"].update(failureMode="Maybe"))
    (issue,) = validate_objects([_obj(maybe)], "1.33").issues
    assert issue.path == "spec.endpointPickerRef.failureMode" and "'Maybe' is not one of" in issue.message
    stray = mutate(INFERENCE_POOL, lambda m: m["spec"].update(extensionRef={"name": "llama-epp"}))  # v1alpha2's name
    assert [i.path for i in validate_objects([_obj(stray)], "1.33").issues] == ["spec"]


def test_an_inference_objective_gateway_and_route_are_validated() -> None:
    objective = {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha2",
        "kind": "InferenceObjective",
        "metadata": {"name": "llama-p1", "namespace": "team-a"},
        "spec": {"priority": 10, "poolRef": {"group": "inference.networking.k8s.io", "name": "llama"}},
    }
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "inference", "namespace": "gateway"},
        "spec": {
            "gatewayClassName": "istio",
            "listeners": [{"name": "t-a", "hostname": "a.example.com", "port": 80, "protocol": "HTTP"}],
        },
    }
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "llama-a", "namespace": "team-a"},
        "spec": {
            "parentRefs": [{"name": "inference", "namespace": "gateway", "sectionName": "t-a"}],
            "rules": [
                {
                    "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama"}],
                    "timeouts": {"request": "330s"},
                }
            ],
        },
    }
    report = validate_objects([_obj(m) for m in (objective, gateway, route)], "1.33")
    assert (report.checked, report.issues) == (3, [])
    twice = mutate(gateway, lambda m: m["spec"]["listeners"].append(dict(m["spec"]["listeners"][0])))
    assert "Listener name must be unique within the Gateway" in [
        i.message for i in validate_objects([_obj(twice)], "1.33").issues
    ]
    slow = mutate(route, lambda m: m["spec"]["rules"][0]["timeouts"].update(backendRequest="400s"))
    assert [i.message for i in validate_objects([_obj(slow)], "1.33").issues] == [
        "backendRequest timeout cannot be longer than request timeout"
    ]


def test_cel_rules_see_defaults_and_escaped_names_as_the_api_server_does() -> None:
    """Gateway API's parentRefs rules read `p.kind` (set by a default) and `p.__namespace__`
    (`namespace` is a CEL reserved word): two gateways of one name in two namespaces are two
    parents, one parent named twice is refused."""
    refs = [{"name": "inference", "namespace": "a", "sectionName": "x"}, {"name": "inference", "namespace": "b"}]
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "team-a"},
        "spec": {"parentRefs": refs},
    }
    assert validate_objects([_obj(route)], "1.33").issues == []
    same = mutate(route, lambda m: m["spec"]["parentRefs"][1].update(namespace="a"))
    assert [i.message for i in validate_objects([_obj(same)], "1.33").issues] == [
        "sectionName must be specified when parentRefs includes 2 or more references to the same parent"
    ]


def test_the_project_file_validates_against_pulumis_schema(tmp_path: Path) -> None:
    assert validate_project_file(PROJECT_DIR / "Pulumi.yaml") == []
    text = (PROJECT_DIR / "Pulumi.yaml").read_text()
    broken = tmp_path / "Pulumi.yaml"
    broken.write_text(text.replace("    type: object", "    type: mapping", 1))
    issues = validate_project_file(broken)
    assert issues and any(i.path.startswith("config") for i in issues)


def test_every_top_level_key_is_declared_an_object_in_the_project_file() -> None:
    from config.sections.stack import TOP_LEVEL_KEYS
    from config.stack_file.yaml12 import read_yaml

    declared = read_yaml((PROJECT_DIR / "Pulumi.yaml").read_bytes())["config"]
    assert sorted(declared) == sorted(TOP_LEVEL_KEYS)
    assert all(d["type"] == "object" and d["default"] == {} for d in declared.values())


def _upstream_like_repository(path: Path) -> str:
    """A git repository laid out like volcano-sh/volcano, tagged v9.9.9."""
    crds = "installer/helm/chart/volcano/crd/bases/"
    crd = "kind: CustomResourceDefinition\n"
    files = {
        "LICENSE": "license text\n",
        "installer/helm/chart/volcano/values.yaml": "basic:\r\n  image_tag_version: v9.9.9\n",  # CRLF kept
        crds + "scheduling.volcano.sh_queues.yaml": crd,
        crds + "scheduling.volcano.sh_podgroups.yaml": crd,
        crds + "topology.volcano.sh_hypernodes.yaml": crd,
    }
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode())

    def git(*args: str) -> str:
        env = {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
        }
        return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True, env=env).stdout

    git("init", "--quiet")
    git("-c", "core.autocrlf=false", "add", ".")
    git("commit", "--quiet", "-m", "release")
    git("tag", "-a", "v9.9.9", "-m", "v9.9.9")
    return git("rev-parse", "HEAD").strip()


def test_the_fetch_script_vendors_a_tag_byte_for_byte(tmp_path: Path) -> None:
    sys.path.insert(0, str(UPSTREAM_DIR))
    try:
        import fetch  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(UPSTREAM_DIR))
    commit = _upstream_like_repository(tmp_path / "repo")
    target = fetch.fetch("volcano", "9.9.9", str(tmp_path / "repo"), into=tmp_path / "vendored")
    assert target == tmp_path / "vendored" / "volcano-9.9.9"
    assert (target / "values.yaml").read_bytes() == b"basic:\r\n  image_tag_version: v9.9.9\n"
    source = (target / "SOURCE").read_text()
    assert f"tag v9.9.9 (commit {commit}" in source
    test_vendored_files_are_byte_identical_to_their_tags(target)


def test_the_fetch_script_reports_a_missing_tag(tmp_path: Path) -> None:
    _upstream_like_repository(tmp_path / "repo")
    proc = subprocess.run(
        [sys.executable, str(UPSTREAM_DIR / "fetch.py"), "volcano", "1.0.0", "--repository", str(tmp_path / "repo")],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 1 and "failed" in proc.stderr and "Traceback" not in proc.stderr


def test_json_schema_of_the_project_is_pulumis_own() -> None:
    (folder,) = [f for f in FOLDERS if f.name.startswith("pulumi-")]
    schema = json.loads((folder / "project.json").read_text())
    assert schema["title"] == "Pulumi Project"
    assert "object" in schema["$defs"]["simpleConfigType"]["enum"]


def _crd_properties(version: str, crd: str, *path: str) -> set[str]:
    document = yaml.safe_load((UPSTREAM_DIR / f"volcano-{version}" / "crd" / crd).read_text())
    (schema,) = [v["schema"]["openAPIV3Schema"] for v in document["spec"]["versions"] if v.get("storage")]
    for key in path:
        schema = schema["properties"][key]
    return set(schema["properties"])


def test_the_version_floors_of_queue_and_hypernode_fields_are_the_vendored_crds() -> None:
    """`dequeueStrategy` and `tierName` arrived with 1.14's CRDs: the floors the manifests follow."""
    queue, hyper_node = "scheduling.volcano.sh_queues.yaml", "topology.volcano.sh_hypernodes.yaml"
    assert "dequeueStrategy" not in _crd_properties("1.13.0", queue, "spec")
    assert "dequeueStrategy" in _crd_properties("1.14.0", queue, "spec")
    assert "tierName" not in _crd_properties("1.13.0", hyper_node, "spec")
    assert "tierName" in _crd_properties("1.14.0", hyper_node, "spec")
    assert FLOOR_DEQUEUE_STRATEGY == FLOOR_TIER_NAMES == (1, 14)


@pytest.mark.parametrize("version", ["1.13.0", "1.14.0"])
def test_an_adopted_older_volcano_renders_what_its_crds_accept(version: str, render_raw: Any) -> None:
    """The documented adoption of a hand-installed Volcano at its own version: every object of
    the dev stack (explicit HyperNodes, Queues) validates against that version's vendored CRDs."""
    raw = mutate(stack_raw("dev"), lambda r: r.update(volcano={"install": False, "version": version}))
    render = render_raw(raw, stack="dev")
    report = check_render(render)
    assert not report.errors, report.errors
    hyper_nodes = [o.manifest for o in render.rendered.objects if o.kind == "HyperNode"]
    queues = [o.manifest for o in render.rendered.objects if o.kind == "Queue" and not o.patch]
    assert hyper_nodes and queues
    assert all(("tierName" in h["spec"]) == (version != "1.13.0") for h in hyper_nodes)
    assert all(("dequeueStrategy" in q["spec"]) == (version != "1.13.0") for q in queues)
