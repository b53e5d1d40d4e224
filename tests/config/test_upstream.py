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
from config.upstream.vendored import LWS, UPSTREAM_DIR, VOLCANO, vendored_versions
from config.upstream.volcano import FLOOR_DEQUEUE_STRATEGY, FLOOR_TIER_NAMES
from offline.check import check_render
from offline.manifests import RenderedObject
from offline.schemas import validate_objects, validate_project_file
from tests.conftest import PROJECT_DIR, STACKS, load, mutate, problems_of, stack_raw

FOLDERS = sorted(p for p in UPSTREAM_DIR.iterdir() if p.is_dir())


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_vendored_files_are_byte_identical_to_their_tags(folder: Path) -> None:
    """Every file is listed in SOURCE with the git blob id it has at the tag; LICENSE is there."""
    source = (folder / "SOURCE").read_text()
    assert re.search(r"tag v\d+\.\d+\.\d+ \(commit [0-9a-f]{40}", source)
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
