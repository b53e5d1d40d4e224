"""`include`: sections in files next to the stack file, read by the program from the stack file's
folder, never outside it, validated as one config, and every problem names the file it is in."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from config.stack_file.reader import read_stack
from tests.conftest import PROJECT_DIR, stack_raw

STACK = "aicloud-b"


def _project(tmp_path: Path) -> Path:
    """A copy of the example stack with its included files, outside the project directory."""
    folder = tmp_path / "cluster-repo"
    shutil.copytree(PROJECT_DIR / "clusters", folder / "clusters")
    shutil.copy(PROJECT_DIR / f"Pulumi.{STACK}.yaml", folder / f"Pulumi.{STACK}.yaml")
    return folder


def _render(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(
        [
            "render",
            "--stack",
            STACK,
            "--config-file",
            str(folder / f"Pulumi.{STACK}.yaml"),
            "--out",
            str(folder / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code, [line[4:] for line in err.splitlines() if line.startswith("  - ")]


def _edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_the_example_keeps_its_tenants_in_files_and_renders_them() -> None:
    raw = read_stack(PROJECT_DIR, STACK).raw
    assert raw["include"]["tenants"] == ["clusters/aicloud-b/tenants/*.yaml"]
    assert not raw.get("models") and not raw.get("tenants"), "nothing of the tenants is in the stack file"
    assert set(stack_raw(STACK)["models"]) == {
        "qwen3-8b",
        "llama-70b",
        "qwen3-30b",
        "bge-reranker",
        "qwen3-32b-batch",
        "qwen3-235b-pd",
    }
    codeowners = (PROJECT_DIR / ".github" / "CODEOWNERS").read_text()
    assert "/clusters/aicloud-b/tenants/chat.yaml" in codeowners


def test_a_copy_elsewhere_reads_its_files_from_beside_the_stack_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    assert _render(folder, capsys)[0] == 0
    assert (folder / "out" / "manifests" / "LeaderWorkerSet.chat.llama-70b.yaml").exists()


def test_a_problem_in_an_included_file_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _project(tmp_path)
    chat = folder / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    _edit(chat, lambda d: d["models"]["qwen3-8b"]["engine"].update(maxModelLen="long"))
    code, errors = _render(folder, capsys)
    assert code == 2
    assert "clusters/aicloud-b/tenants/chat.yaml: models.qwen3-8b.engine.maxModelLen: " in "\n".join(errors)


def test_a_yaml_error_in_an_included_file_is_labelled_as_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    chat = folder / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    chat.write_text(chat.read_text() + "models: [unclosed\n")
    code, errors = _render(folder, capsys)
    assert code == 2
    said = "\n".join(errors)
    assert "clusters/aicloud-b/tenants/chat.yaml: (tenant file): not valid YAML" in said and "stack file" not in said


def _quota_in_the_platform_file(folder: Path) -> dict[str, Any]:
    """chat's queue moved from its tenant file to the stack file, the platform's: returns it."""
    chat = folder / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    queue: dict[str, Any] = {}
    _edit(chat, lambda d: queue.update(d["tenants"]["chat"].pop("queue")))
    _edit(
        folder / f"Pulumi.{STACK}.yaml",
        lambda d: d["config"].setdefault("volcano-platform:tenants", {}).update(chat={"queue": queue}),
    )
    return queue


def test_the_platform_keeps_a_tenants_quota_while_its_file_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The split layout: the quota in the platform's file, the tenant's gateway and models in its
    own; the render is the same objects as with everything in the tenant file."""
    folder = _project(tmp_path)
    assert _render(folder, capsys) == (0, [])
    whole = (folder / "out" / "resources.yaml").read_text()
    _quota_in_the_platform_file(folder)
    assert _render(folder, capsys) == (0, [])
    assert (folder / "out" / "resources.yaml").read_text() == whole


def test_what_the_platform_writes_for_a_split_tenant_is_not_held_to_the_tenants_grant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A guarantee no tenant file may write (the default grant) is the platform's to give."""
    folder = _project(tmp_path)
    _quota_in_the_platform_file(folder)
    _edit(
        folder / f"Pulumi.{STACK}.yaml",
        lambda d: d["config"]["volcano-platform:tenants"]["chat"]["queue"].update(guarantee={"nvidia.com/gpu": 8}),
    )
    assert _render(folder, capsys) == (0, [])


def test_two_tenant_files_of_one_tenant_are_still_defined_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the platform's files may write part of a tenant whose file writes the rest."""
    folder = _project(tmp_path)
    (folder / "clusters" / "aicloud-b" / "tenants" / "chat-more.yaml").write_text(
        "tenants:\n  chat:\n    namespaces: [chat-more]\n"
    )
    code, errors = _render(folder, capsys)
    assert code == 2 and any("tenants.chat: defined twice" in e for e in errors), errors


def test_a_tenant_file_cannot_write_what_the_platform_wrote_for_its_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    queue = _quota_in_the_platform_file(folder)
    chat = folder / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    _edit(chat, lambda d: d["tenants"]["chat"].update(queue={**queue, "capability": {"nvidia.com/gpu": 512}}))
    code, errors = _render(folder, capsys)
    assert code == 2
    assert errors == [
        "clusters/aicloud-b/tenants/chat.yaml: tenants.chat.queue: written in the stack file (the platform's) and "
        "in clusters/aicloud-b/tenants/chat.yaml, the tenant's file; keep it in the stack file: the tenant file "
        "holds what the platform's files leave to the tenant"
    ], errors


def test_rules_that_span_sections_see_the_merged_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _project(tmp_path)
    search = folder / "clusters" / "aicloud-b" / "tenants" / "search.yaml"
    # A queue too small for the tenant's gang, and a priority class that does not exist.
    _edit(search, lambda d: d["models"]["bge-reranker"].update(priorityClass="p9-unknown"))
    code, errors = _render(folder, capsys)
    assert code == 2 and any(
        e.startswith("clusters/aicloud-b/tenants/search.yaml: models.bge-reranker.priorityClass") for e in errors
    )


@pytest.mark.parametrize(
    ("include", "message"),
    [
        ({"files": ["/etc/passwd"]}, "relative to the stack file's folder"),
        ({"files": ["../outside.yaml"]}, "without `..`"),
        ({"files": ["clusters/**/x.yaml"]}, "without `..` or `**`"),
        ({"files": ["clusters/none-*.yaml"]}, "no file matches"),
        ({"files": ["clusters/aicloud-b/link.yaml"]}, "leads outside the stack's folder"),
        ({"files": ["clusters/aicloud-b/tenants"]}, "is not a regular file"),
        ({"files": ["clusters/aicloud-b/pipe.yaml"]}, "is not a regular file"),
        ({"files": ["clusters/" + "x" * 400 + "*.yaml"]}, "characters long, more than the 300"),
    ],
)
def test_included_files_stay_inside_the_stack_folder(
    include: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    (tmp_path / "outside.yaml").write_text("cluster: {name: stolen}\n")
    (folder / "clusters" / "aicloud-b" / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    os.mkfifo(folder / "clusters" / "aicloud-b" / "pipe.yaml")  # reading it would wait forever
    _edit(folder / f"Pulumi.{STACK}.yaml", lambda d: d["config"]["volcano-platform:include"].update(include))
    code, errors = _render(folder, capsys)
    assert code == 2 and any(e.startswith("include.files[") and message in e for e in errors), errors


@pytest.mark.parametrize(
    ("file", "content", "expected"),
    [
        # a model defined in two files
        ("extra.yaml", {"models": {"qwen3-8b": {"tenant": "chat"}}}, "models.qwen3-8b: defined twice"),
        # a section written in two places
        ("extra.yaml", {"cluster": {"name": "other"}}, "cluster: the section is written in the stack file"),
        # secrets belong in the stack file, encrypted
        ("extra.yaml", {"secrets": {"token": "x"}}, "secrets: an included file holds"),
        # the CLI's YAML rules hold in included files too
        ("extra.yaml", "defaultQueue: {reclaimable: yes}\n", "defaultQueue.reclaimable"),
    ],
)
def test_what_an_included_file_may_hold(
    file: str, content: Any, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    path = folder / "clusters" / file
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    _edit(
        folder / f"Pulumi.{STACK}.yaml",
        lambda d: d["config"]["volcano-platform:include"]["files"].append(f"clusters/{file}"),
    )
    code, errors = _render(folder, capsys)
    assert code == 2 and any(expected in e for e in errors), errors
    assert any(e.startswith("clusters/") and f"clusters/{file}" in e for e in errors), "the file is named"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["models"]["qwen3-8b"].update(tenant="search"),
            "models.qwen3-8b.tenant: a model in the tenant file",
        ),
        (lambda d: d.update(cluster={"name": "x"}), "cluster: a tenant file holds one tenant"),
        (lambda d: d["tenants"].update(other={"queue": {}}), "tenants: a tenant file holds one tenant"),
    ],
)
def test_a_tenant_file_holds_one_tenant_and_only_its_models(
    change: Any, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    _edit(folder / "clusters" / "aicloud-b" / "tenants" / "chat.yaml", change)
    code, errors = _render(folder, capsys)
    assert code == 2 and any(expected in e for e in errors), errors


def test_a_change_to_an_included_file_is_a_change_to_its_stack_only(tmp_path: Path) -> None:
    from offline.diff import changed_stack_files

    repo = _project(tmp_path)
    shutil.copy(PROJECT_DIR / "Pulumi.dev.yaml", repo / "Pulumi.dev.yaml")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "base")
    assert changed_stack_files(repo, "HEAD", STACK) == []
    chat = repo / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    chat.write_text(chat.read_text() + "\n# a comment\n")
    (repo / "clusters" / "aicloud-b" / "tenants" / "new-team.yaml").write_text("tenants: {new-team: {}}\n")
    assert changed_stack_files(repo, "HEAD", STACK) == [
        "clusters/aicloud-b/tenants/chat.yaml",
        "clusters/aicloud-b/tenants/new-team.yaml",
    ]
    assert changed_stack_files(repo, "HEAD", "dev") == []


@pytest.mark.parametrize(
    ("kind", "pattern"),
    [
        # a tenant's file read as the platform's would escape the tenant boundary
        ("files", "clusters/aicloud-b/tenants/chat.yaml"),
        # two patterns over one file would merge it twice
        ("tenants", "clusters/aicloud-b/tenants/c*.yaml"),
    ],
)
def test_a_file_listed_twice_is_refused_at_the_second_entry(
    kind: str, pattern: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    _edit(folder / f"Pulumi.{STACK}.yaml", lambda d: d["config"]["volcano-platform:include"][kind].insert(0, pattern))
    code, errors = _render(folder, capsys)
    assert code == 2
    first, second = (f"include.{kind}[0]", f"include.{kind}[1]") if kind == "tenants" else ("include.files[0]", None)
    if second is None:  # `files` are read before `tenants`: the tenants' pattern is the second entry
        first, second = "include.files[0]", "include.tenants[0]"
    assert any(e.startswith(f"{second}: `clusters/aicloud-b/tenants/chat.yaml` is listed already, by `{first}`")
               for e in errors), errors  # fmt: skip


def test_a_warning_about_a_key_in_an_included_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    chat = folder / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    _edit(chat, lambda d: d["models"]["qwen3-8b"].update(image="vllm/vllm-openai:nightly"))
    code = main(["render", "--stack", STACK, "--config-file", str(folder / f"Pulumi.{STACK}.yaml"),
                 "--out", str(folder / "out")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "warning: clusters/aicloud-b/tenants/chat.yaml: models.qwen3-8b.image: " in err


def test_a_link_and_its_target_matched_by_one_pattern_are_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _project(tmp_path)
    tenants = folder / "clusters" / "aicloud-b" / "tenants"
    (tenants / "chat-again.yaml").symlink_to(tenants / "chat.yaml")
    code, errors = _render(folder, capsys)
    assert code == 2
    assert any("is listed already, by `include.tenants[0]` (a link and its target)" in e for e in errors), errors
