"""The offline engine: the real program under Pulumi's mock runtime, stable output, diff, check."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from config.stack_file.reader import read_stack
from offline.engine import ProgramError, clean, run_program
from offline.manifests import RenderedObject
from offline.render import render_stack, write_render
from offline.review import diff_dirs
from offline.schemas import validate_objects
from tests.conftest import PROJECT_DIR, STACKS, TOOL, mutate, stack_raw, write_stack


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_runs_under_the_mock_runtime(stack: str, committed_render: Any) -> None:
    result = committed_render(stack)
    assert result.rendered.objects and result.rendered.releases
    assert not result.run.duplicates
    assert result.run.outputs["cluster"] == result.spec.cluster_name


def test_render_writes_the_documented_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--stack", "dev", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".volcano-platform-render",
        "helm",
        "images.txt",
        "manifests",
        "resources.yaml",
        "summary.json",
        "summary.md",
        "topology.svg",
    ]
    assert (tmp_path / "helm" / "volcano.yaml").exists()
    for path in (tmp_path / "manifests").iterdir():
        manifest = yaml.safe_load(path.read_text())
        assert list(manifest)[:3] == ["apiVersion", "kind", "metadata"], path
    assert "rendered stack dev" in capsys.readouterr().out


def test_two_renders_are_byte_identical(tmp_path: Path) -> None:
    for out in ("a", "b"):
        write_render(render_stack(PROJECT_DIR, "aicloud-a"), tmp_path / out)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")


def test_rerender_replaces_the_whole_earlier_render(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_render(render_stack(PROJECT_DIR, "aicloud-b"), out)
    earlier = {p.name for p in (out / "manifests").iterdir()}
    dev = render_stack(PROJECT_DIR, "dev")
    write_render(dev, tmp_path / "fresh")
    write_render(dev, out)
    now = {p.name for p in (out / "manifests").iterdir()}
    assert earlier - now, "the earlier render had objects the dev stack does not"
    assert now == {p.name for p in (tmp_path / "fresh" / "manifests").iterdir()}, "nothing of it is left"
    shutil.rmtree(tmp_path / "fresh")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no staging folder is left behind"


def test_a_file_added_to_a_render_folder_is_never_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The marker lists what the render wrote; a note or manifest someone put beside them stops
    the next render (which would replace the whole folder) instead of disappearing with it."""
    out = tmp_path / "out"
    assert main(["render", "--stack", "dev", "--out", str(out)]) == 0
    (out / "manifests" / "my-notes.yaml").write_text("kept\n")
    assert main(["render", "--stack", "dev", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds files an earlier render did not write (manifests/my-notes.yaml)" in err
    assert (out / "manifests" / "my-notes.yaml").read_text() == "kept\n"
    (out / "manifests" / "my-notes.yaml").unlink()
    assert main(["render", "--stack", "dev", "--out", str(out)]) == 0


def test_a_folder_the_tool_did_not_write_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    (work / "manifests").mkdir(parents=True)
    (work / "manifests" / "mine.yaml").write_text("kept\n")
    (work / "notes.txt").write_text("kept\n")
    assert main(["render", "--stack", "dev", "--out", str(work)]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (work / "notes.txt").read_text() == "kept\n" and (work / "manifests" / "mine.yaml").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    assert main(["render", "--stack", "dev", "--out", str(tmp_path / "link")]) == 2
    assert "symbolic link" in capsys.readouterr().err and not any(elsewhere.iterdir())


def test_a_failed_render_leaves_the_previous_one_marked_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["render", "--stack", "dev", "--out", str(out)]) == 0
    before = (out / "summary.md").read_text()
    broken = tmp_path / "Pulumi.dev.yaml"
    broken.write_text((PROJECT_DIR / "Pulumi.dev.yaml").read_text().replace("gpusPerNode: 2", "gpusPerNode: two"))
    assert main(["render", "--stack", "dev", "--config-file", str(broken), "--out", str(out)]) == 2
    capsys.readouterr()
    assert (out / "summary.md").read_text() == before
    assert "stale" in (out / "STALE.md").read_text()
    assert main(["render", "--stack", "dev", "--out", str(out)]) == 0
    assert not (out / "STALE.md").exists()


def test_integers_stay_integers_and_secrets_are_hidden(tmp_path: Path) -> None:
    assert clean(
        {
            "a": 2.0,
            "b": [1.5, 3.0],
            "s": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "hunter2"},
        }
    ) == {"a": 2, "b": [1.5, 3], "s": "[secret]"}
    result = render_stack(PROJECT_DIR, "aicloud-a")
    pod_group = result.rendered.find("PodGroup", "qwen2-72b-tenanta", "a01").manifest
    assert pod_group["spec"]["minMember"] == 2 and isinstance(pod_group["spec"]["minMember"], int)


def test_a_changed_value_shows_up_as_exactly_that_objects_change(tmp_path: Path, render_raw: Any) -> None:
    raw = stack_raw("aicloud-a")
    write_render(render_raw(raw), tmp_path / "old")
    write_render(render_raw(mutate(raw, lambda r: r["tenants"]["tenantb"]["queue"].update(weight=3))), tmp_path / "new")
    result, text = diff_dirs(tmp_path / "old", tmp_path / "new")
    assert result.changed == ["manifests/Queue.tenantb.yaml"]
    assert not (result.added or result.removed or result.replaced)
    assert "-    weight: 1\n" in text.replace("  weight", "    weight") or "-  weight: 1" in text
    assert "+  weight: 3" in text


def test_diff_reports_replacements_and_exit_codes(tmp_path: Path, render_raw: Any) -> None:
    raw = stack_raw("aicloud-a")
    write_render(render_raw(raw), tmp_path / "old")
    moved = mutate(raw, lambda r: r["models"]["qwen8b-preemptor"].update(namespace="a02"))
    moved["tenants"]["tenanta"]["namespaces"] = ["a01", "a02"]
    write_render(render_raw(moved), tmp_path / "new")
    result, _ = diff_dirs(tmp_path / "old", tmp_path / "new")
    replaced = dict(result.replaced)
    assert "manifests/Deployment.a02.qwen8b-preemptor.yaml" in replaced
    assert "identity changes" in replaced["manifests/Deployment.a02.qwen8b-preemptor.yaml"]
    assert "manifests/Namespace.a02.yaml" in result.added
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "new")]) == 1
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "old")]) == 0
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize(
    ("before", "after"),
    [("value: 10000", "value: 20000"), ("preemptionPolicy: PreemptLowerPriority", "preemptionPolicy: Never")],
)
def test_diff_flags_immutable_field_changes_as_replacements(tmp_path: Path, before: str, after: str) -> None:
    write_render(render_stack(PROJECT_DIR, "dev"), tmp_path / "old")
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    path = tmp_path / "new" / "manifests" / "PriorityClass.p2-normal.yaml"
    assert before in path.read_text()
    path.write_text(path.read_text().replace(before, after))
    result, _ = diff_dirs(tmp_path / "old", tmp_path / "new")
    assert [f for f, _ in result.replaced] == ["manifests/PriorityClass.p2-normal.yaml"]


def test_duplicate_urns_are_rejected(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: volcano-platform\nruntime: python\n")
    (project / "Pulumi.dup.yaml").write_text("config:\n  volcano-platform:cluster: {}\n")
    (project / "__main__.py").write_text(
        "import pulumi_kubernetes as k8s\n"
        "k8s.core.v1.Namespace('same', metadata={'name': 'a'})\n"
        "k8s.core.v1.Namespace('same', metadata={'name': 'b'})\n"
    )
    run = run_program(project, read_stack(project, "dup"))
    assert run.duplicates == [
        "urn:pulumi:dup::volcano-platform::pulumi:pulumi:Stack$kubernetes:core/v1:Namespace::same"
    ]
    with pytest.raises(ProgramError, match="registered twice"):
        render_stack(project, "dup")


def test_program_bugs_are_not_mistaken_for_config_errors(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: volcano-platform\nruntime: python\n")
    (project / "Pulumi.bug.yaml").write_text("config:\n  volcano-platform:cluster: {}\n")
    (project / "__main__.py").write_text("raise KeyError('oops')\n")
    with pytest.raises(ProgramError, match="KeyError"):
        run_program(project, read_stack(project, "bug"))


def test_secure_values_become_secret_placeholders(tmp_path: Path) -> None:
    raw = stack_raw("dev")
    path = write_stack(tmp_path / "Pulumi.s.yaml", raw)
    data = yaml.safe_load(path.read_text())
    ciphertext = "v1:jkDab+RjkhW3UlXB:B/E0OVE3jqn2wXpE/g5T6Np3EfM1eClb4JEV7ycsA25h54wUMkL/07s="
    data["config"]["volcano-platform:secrets"] = {"hf-token": {"secure": ciphertext}}
    data["encryptionsalt"] = "v1:dGVzdA==:v1:dGVzdA==:dGVzdA=="  # a passphrase stack's, as the CLI writes it
    data["config"]["volcano-platform:models"]["qwen3-0-6b"]["source"]["hub"]["tokenSecret"] = "hf-token"
    path.write_text(yaml.safe_dump(data))
    stack = read_stack(PROJECT_DIR, "s", path)
    assert "volcano-platform:secrets" in stack.secret_keys and stack.plaintext_secrets == []
    secret = render_stack(PROJECT_DIR, "s", path).rendered.find("Secret", "hf-token", "team-a")
    assert secret.manifest["stringData"] == {"value": "[secret]"}


def test_check_fails_on_objects_that_violate_their_schemas() -> None:
    broken = [
        RenderedObject(
            "u1",
            "kubernetes:scheduling.volcano.sh/v1beta1:PodGroup",
            "PodGroup.a.broken.yaml",
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "broken", "namespace": "a"},
                "spec": {"minMember": "two", "queueName": "q"},
            },
        ),
        RenderedObject(
            "u2",
            "kubernetes:topology.volcano.sh/v1alpha1:HyperNode",
            "HyperNode.two-selectors.yaml",
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": {"name": "two-selectors"},
                "spec": {
                    "tier": 1,
                    "members": [
                        {"type": "Node", "selector": {"exactMatch": {"name": "n1"}, "regexMatch": {"pattern": "n.*"}}}
                    ],
                },
            },
        ),
        RenderedObject(
            "u3",
            "kubernetes:apps/v1:Deployment",
            "Deployment.a.d.yaml",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "a"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i:1", "gpus": 8}]},
                    },
                },
            },
        ),
    ]
    report = validate_objects(broken, "1.33")
    messages = {issue.file: issue.message for issue in report.issues}
    assert "'two' is not of type 'integer'" in str([i for i in report.issues if i.file == "PodGroup.a.broken.yaml"])
    assert any("queueName" in i.message for i in report.issues), "unknown fields would be pruned silently"
    assert "Only one of ExactMatch, RegexMatch, or LabelMatch" in messages["HyperNode.two-selectors.yaml"]
    assert "gpus" in messages["Deployment.a.d.yaml"]
    assert report.checked == 3


def test_check_command_passes_the_committed_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    for stack in STACKS:
        assert main(["check", "--stack", stack]) == 0, capsys.readouterr().out
    assert "check passed" in capsys.readouterr().out


def test_check_command_exit_code_on_invalid_config(tmp_path: Path) -> None:
    path = write_stack(tmp_path / "Pulumi.bad.yaml", mutate(stack_raw("dev"), lambda r: r.update(tenant={})))
    assert main(["check", "--stack", "bad", "--config-file", str(path)]) == 2


def _diff_at_head(clone: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", "diff", "--stack", "dev", "--base", "HEAD"],
        cwd=clone,
        env={**os.environ, "PYTHONPATH": str(clone)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_diff_against_a_git_revision(tmp_path: Path) -> None:
    """Renders the stack at HEAD of a clone and in its working tree, and compares them."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(PROJECT_DIR), str(clone)], check=True)
    if not (clone / "Pulumi.dev.yaml").exists():
        pytest.skip("the committed history has no dev stack yet")
    stack_file = clone / "Pulumi.dev.yaml"
    stack_file.write_text(stack_file.read_text().replace("maxModelLen: 8192", "maxModelLen: 4096"))
    changed = _diff_at_head(clone)
    assert changed.returncode == 1, changed.stderr
    assert "stack dev: HEAD -> working tree" in changed.stdout
    assert "  ~ manifests/Deployment.team-a.qwen3-0-6b.yaml" in changed.stdout
    assert "+        - '4096'" in changed.stdout
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--", "Pulumi.dev.yaml"], check=True)
    same = _diff_at_head(clone)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no changes" in same.stdout


def test_committed_stack_renders_match_their_files_byte_for_byte(tmp_path: Path) -> None:
    """The CLI and the library produce the same directory."""
    write_render(render_stack(PROJECT_DIR, "dev"), tmp_path / "lib")
    assert main(["render", "--stack", "dev", "--out", str(tmp_path / "cli")]) == 0
    comparison = filecmp.dircmp(tmp_path / "lib", tmp_path / "cli")
    assert not comparison.diff_files and not comparison.left_only and not comparison.right_only


def test_summary_lists_tenants_models_placement_and_endpoints(committed_render: Any) -> None:
    from offline.summary import render_summary

    result = committed_render("aicloud-a")
    summary = render_summary(result.spec, result.rendered)
    for section in ("## Resources", "## Scheduler", "## Tenants and quotas", "## Models", "## Topology", "## Warnings"):
        assert section in summary
    assert "| qwen2-72b-tenanta | LeaderWorkerSet | tenanta/a01 |" in summary
    assert "fits tier 1 (64 replica slots)" in summary
    assert "- `qwen8b-preemptor`: http://qwen8b.a01.svc:8080" in summary


def test_fifty_renders_in_one_process_leave_no_event_loop_open() -> None:
    """The mock monitor gives each worker thread an event loop of its own; the engine closes them
    all, so none is finalised at interpreter exit (`Exception ignored in BaseEventLoop.__del__`)."""
    import asyncio
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(50):
            render_stack(PROJECT_DIR, "dev")
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed()] == []


def test_twenty_concurrent_renders_print_nothing_on_stderr(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "always::ResourceWarning"}
    procs = [
        subprocess.Popen(
            [*TOOL, "render", "--stack", "dev", "--out", str(tmp_path / str(i))],
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(20)
    ]
    results = [(proc.wait(timeout=300), proc.stderr.read() if proc.stderr else "") for proc in procs]
    assert results == [(0, "")] * 20


def test_the_engines_shortcuts_change_nothing_that_is_registered() -> None:
    """Skipping the SDK's stack capture and the program's collector tuning are about time only:
    the registrations (URNs, inputs, options) are the same as with neither."""
    import atexit
    import contextvars
    import dataclasses
    import gc
    import runpy

    from offline import engine

    stack = read_stack(PROJECT_DIR, "aicloud-a")
    fast = run_program(PROJECT_DIR, stack)
    enabled = gc.isenabled()
    plain = contextvars.Context().run(
        engine._run_mocked, stack, lambda: runpy.run_path(str(PROJECT_DIR), run_name="__main__")
    )
    (gc.enable if enabled else gc.disable)()  # undo what the program set, as the engine does
    atexit.unregister(gc.freeze)

    def comparable(run: Any) -> dict[str, dict[str, Any]]:
        # Keyed by URN: registrations arrive in whatever order the event loop runs them.
        return {r.urn: {**dataclasses.asdict(r), "provider": r.provider.rpartition("::")[0]} for r in run.registrations}

    assert comparable(fast) == comparable(plain) and len(fast.registrations) > 150


def test_a_run_leaves_the_process_as_it_found_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program turns the cyclic collector off for its one long run and freezes the heap at
    exit; the engine gives a process that renders many stacks its own settings back."""
    import atexit
    import gc

    from pulumi.runtime import resource as sdk_resource

    hooks: list[Any] = []
    monkeypatch.setattr(atexit, "register", hooks.append)
    monkeypatch.setattr(atexit, "unregister", hooks.remove)
    capture = sdk_resource._get_stack_trace
    before = gc.get_threshold()
    assert gc.isenabled()
    run_program(PROJECT_DIR, read_stack(PROJECT_DIR, "dev"))
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0 and gc.isenabled()
    assert hooks == []
    assert sdk_resource._get_stack_trace is capture


def test_the_pull_request_diff_leads_with_what_changes_on_the_platform(tmp_path: Path, render_raw: Any) -> None:
    """A change that resizes a model and raises a quota: the Markdown diff says so in tables first
    (models, tenant quotas, placement per domain), then lists the objects, each diff collapsed."""
    from offline.review import diff_markdown

    before = stack_raw("aicloud-a")
    after = mutate(before, lambda r: r["models"]["qwen2-72b-tenanta"].update(replicas=2))
    after["tenants"]["tenantb"]["queue"]["capability"]["mars-tech.com/gpu"] = 512
    write_render(render_raw(before, stack="aicloud-a"), tmp_path / "base")
    write_render(render_raw(after, stack="aicloud-a"), tmp_path / "head")
    result, text = diff_markdown(tmp_path / "base", tmp_path / "head", "`aicloud-a`: `main` → this change")
    platform, _, objects = text.partition("<details>")
    assert platform.startswith("### `aicloud-a`: `main` → this change\n\n**Models**")
    assert "| `qwen2-72b-tenanta` | changed | replicas: 1 → 2 |" in platform
    assert "| `tenantb` | changed | capability: mars-tech.com/gpu=1024 → mars-tech.com/gpu=512 |" in platform
    assert "| `leafpair12` | changed | soft: 16 → 32 |" in platform
    assert "0 added, 2 changed, 0 replaced, 0 removed" in platform
    assert "<code>manifests/LeaderWorkerSet.a01.qwen2-72b-tenanta.yaml</code> changed" in "<details>" + objects
    # The list of objects, then one collapsed diff per object.
    assert objects.startswith("<summary>the 2 object(s)</summary>")
    assert objects.count("<details>") == len(result.changed) == objects.count("```diff")


def test_diff_keeps_both_renders_for_their_pictures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "keep"
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--keep", str(keep), "--markdown"]) in (0, 1)
    assert (keep / "base" / "topology.svg").is_file() and (keep / "head" / "topology.svg").is_file()
    assert (keep / "head" / "summary.json").is_file()
    assert "**Objects:** no changes" in capsys.readouterr().out


def test_both_sides_of_a_diff_can_come_from_stack_files_outside_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "head").mkdir()
    base = write_stack(tmp_path / "base" / "Pulumi.outside.yaml", stack_raw("dev"))
    head = write_stack(
        tmp_path / "head" / "Pulumi.outside.yaml",
        mutate(stack_raw("dev"), lambda r: r["models"]["qwen3-0-6b"].update(replicas=2)),
    )
    args = ["diff", "--stack", "outside", "--base", "HEAD", "--config-file", str(head), "--base-config-file", str(base)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "0 added, 1 changed, 0 replaced, 0 removed" in out and "Deployment.team-a.qwen3-0-6b.yaml" in out
