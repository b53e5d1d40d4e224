"""The reviewer's view of a change: the same summary in the terminal and in the pull request,
tenants with their quotas, objects that only list the models and tenants grouped apart, and the
what-if on a recorded cluster."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from offline.diff import Entry
from offline.render import write_render
from offline.review import DERIVED, diff_dirs, diff_markdown, only_names_differ, platform_changes
from tests.conftest import PROJECT_DIR, stack_raw, write_stack

DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"


def _tenant_and_model_added(raw: dict[str, Any]) -> dict[str, Any]:
    """A pull request as a tenant team writes it: a new tenant, a second model, a cut quota."""
    after = copy.deepcopy(raw)
    after["tenants"]["search"]["queue"]["deserved"]["nvidia.com/gpu"] = 48
    after["tenants"]["newteam"] = {
        "queue": {"capability": {"nvidia.com/gpu": 16}, "deserved": {"nvidia.com/gpu": 8}},
    }
    model = copy.deepcopy(after["models"]["qwen3-8b"])
    model.pop("autoscaling", None)
    model.update(servedModelName="Qwen3-4B", source={"hub": {"id": "Qwen/Qwen3-4B"}})
    after["models"]["qwen3-4b"] = model
    return after


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from offline.render import render_stack
    from tests.conftest import write_stack

    tmp = tmp_path_factory.mktemp("review")
    before = stack_raw("aicloud-b")
    for name, raw in (("base", before), ("head", _tenant_and_model_added(before))):
        stack_file = write_stack(tmp / f"Pulumi.{name}.yaml", raw)
        write_render(render_stack(PROJECT_DIR, "aicloud-b", stack_file), tmp / name)
    return tmp / "base", tmp / "head"


def test_plain_and_markdown_open_with_the_same_platform_changes(renders: tuple[Path, Path]) -> None:
    _, plain = diff_dirs(*renders)
    result, markdown = diff_markdown(*renders)
    new_tenant = (
        "queue newteam under root, weight 1, deserved nvidia.com/gpu=8, guarantee -, capability nvidia.com/gpu=16"
    )
    assert f"Tenants\n  + newteam: {new_tenant}\n  ~ search: deserved: nvidia.com/gpu=64 → nvidia.com/gpu=48" in plain
    assert f"| `newteam` | added | {new_tenant} |" in markdown
    assert "| `search` | changed | deserved: nvidia.com/gpu=64 → nvidia.com/gpu=48 |" in markdown
    assert "Models\n  + qwen3-4b: Deployment, 1 × 1 pods, fits cluster" in plain
    # Both lead with the platform, then the objects.
    assert plain.index("Models") < plain.index("Tenants") < plain.index(f"{len(result.added)} added")
    assert markdown.index("**Models**") < markdown.index("**Tenants**") < markdown.index("**Objects:**")


def test_the_first_change_of_a_new_stack_lists_everything_as_added(renders: tuple[Path, Path], tmp_path: Path) -> None:
    """The base of a stack the change adds is an empty render (`render_at_revision`): every model
    and tenant is added, not 'cannot be listed'."""
    empty = tmp_path / "base"
    empty.mkdir()
    _, plain = diff_dirs(empty, renders[1])
    assert "cannot be listed" not in plain
    assert "  + qwen3-4b: Deployment" in plain and "  + newteam: queue newteam" in plain


def test_a_tenant_hostname_added_is_a_tenant_change_in_words() -> None:
    """A new hostname is where a tenant's requests come in: it shows in the tenant's row, not only
    inside the Gateway's object diff."""
    tenant = {"queue": "chat", "namespaces": ["chat"], "hostnames": ["chat.llm.example"]}
    summary = {"models": {}, "tenants": {"chat": tenant}, "domains": {}, "warnings": [], "schemaVersion": 2}
    grown = copy.deepcopy(summary)
    grown["tenants"]["chat"]["hostnames"].append("*.chat.llm.example")
    [(title, [row])] = platform_changes(summary, grown).sections
    assert (title, row.change) == ("Tenants", "changed")
    assert row.text == "hostnames: chat.llm.example → chat.llm.example, *.chat.llm.example"


def test_the_lists_of_every_model_and_tenant_are_grouped_as_their_consequence(renders: tuple[Path, Path]) -> None:
    result, plain = diff_dirs(*renders)
    _, markdown = diff_markdown(*renders)
    listing = plain[: plain.index("\n\n---")] if "\n\n---" in plain else plain
    grouped = listing.split(f"  {DERIVED.replace('it lists', 'they list')}:\n")[1].splitlines()
    assert grouped == [
        "  ~ manifests/ConfigMap.monitoring.volcano-platform-dashboard.yaml",
        "  ~ manifests/PrometheusRule.volcano-system.volcano-platform.yaml",
    ]
    assert "  ~ manifests/Queue.search.yaml" in listing.split(DERIVED.replace("it lists", "they list"))[0]
    assert len(result.changed) == 3, "grouped, still counted as changes"
    # In the pull request, their diffs come last, each saying why it changed.
    summaries = [line for line in markdown.splitlines() if line.startswith("<details><summary><code>")]
    assert [DERIVED in s for s in summaries][-2:] == [True, True]
    assert not any(DERIVED in s for s in summaries[:-2])


def _entry(text: str) -> Entry:
    return Entry("urn:rule", "manifests/PrometheusRule.x.yaml", text, {})


RULE = 'spec:\n  expr: up{{model=~"{models}"}} == 0\n  for: {wait}\n  query: {tenants}\n'


@pytest.mark.parametrize(
    ("after", "grouped"),
    [
        (RULE.format(models="a|new-model|b", wait="5m", tenants="t1,t2,newteam"), True),
        (RULE.format(models="a|b|new-model", wait="5m", tenants="t1,t2"), True),
        # Anything beside the names is a change of its own.
        (RULE.format(models="a|new-model|b", wait="10m", tenants="t1,t2"), False),
        # A name that only contains an added one is not it.
        (RULE.format(models="a|b|new-model-2", wait="5m", tenants="t1,t2"), False),
        (RULE.format(models="a|b", wait="5m", tenants="t1,t2") + "  extra: newteam\n", False),
    ],
)
def test_only_the_added_names_make_an_object_derived(after: str, grouped: bool) -> None:
    before = RULE.format(models="a|b", wait="5m", tenants="t1,t2")
    names = {"new-model", "newteam"}
    assert only_names_differ(_entry(before), _entry(after), names) is grouped
    assert not only_names_differ(_entry(before), _entry(after), set())


def test_a_selector_of_one_name_that_becomes_a_list_is_derived() -> None:
    before = 'spec:\n  expr: kube_deployment_spec_replicas{deployment="qwen3-8b"} > 0\n'
    after = 'spec:\n  expr: kube_deployment_spec_replicas{deployment=~"qwen3-4b|qwen3-8b"} > 0\n'
    assert only_names_differ(_entry(before), _entry(after), {"qwen3-4b"})


def test_the_diff_carries_the_what_if_on_a_recorded_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    dump = DUMPS / "aicloud-a-preempt.yaml"
    args = ["diff", "--stack", "aicloud-a", "--base", "HEAD", "--from", str(dump), "--engine", "model"]
    assert main([*args, "--markdown"]) in (0, 1)
    markdown = capsys.readouterr().out
    assert "### What the scheduler will do: stack `aicloud-a`" in markdown
    assert "| `qwen2-72b-tenanta` | **evicts** |" in markdown
    assert markdown.index("What the scheduler will do") < markdown.index("**Objects:**")
    assert main(args) in (0, 1)
    plain = capsys.readouterr().out
    assert "| `qwen2-72b-tenanta` | **evicts** |" in plain


def test_an_unreadable_recorded_cluster_leaves_the_diff_standing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "snapshot.json"
    broken.write_text('{"kind": ')
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--from", str(broken), "--engine", "model"]) in (0, 1)
    out = capsys.readouterr().out
    assert "No what-if: the recorded cluster cannot be read" in out and str(broken) in out


def test_the_what_if_needs_a_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--from", "cluster.json"]) == 2
    assert "diff --from needs --stack and --base" in capsys.readouterr().err


def test_a_base_that_git_would_read_as_an_option_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--stack", "dev", "--base=--output=/tmp/x"]) == 2
    assert "is not a git revision (it starts with `-`)" in capsys.readouterr().err


def test_the_verdicts_a_change_makes_lead_the_what_if(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base revision's stack and the change's, answered on the same recorded cluster: the first
    table is the verdicts that differ (before → after), a new model among them."""
    raw = stack_raw("aicloud-a")
    raw["models"]["qwen2-72b-tenanta"]["priorityClass"] = "p3-low"  # never preempts: it now waits
    raw["models"]["second-8b"] = {**raw["models"]["qwen8b-preemptor"], "replicas": 1, "serviceName": "second-8b"}
    stack = write_stack(tmp_path / "Pulumi.aicloud-a.yaml", raw)
    dump = DUMPS / "aicloud-a-preempt.yaml"
    args = ["diff", "--stack", "aicloud-a", "--base", "HEAD", "--config-file", str(stack), "--from", str(dump)]
    assert main([*args, "--engine", "model", "--markdown"]) == 1
    out = capsys.readouterr().out
    first = out.index("#### Verdicts this change makes")
    assert first < out.index("| `qwen2-72b-tenanta` | **evicts** | **waits** |")
    assert first < out.index("| `second-8b` | (new) | **evicts** |")
    assert "Keeps serving when any one node is lost: " in out and "`second-8b` **no** (every replica on `" in out


def test_a_change_that_moves_no_verdict_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    dump = DUMPS / "aicloud-a-preempt.yaml"
    assert main(["diff", "--stack", "aicloud-a", "--base", "HEAD", "--from", str(dump), "--engine", "model"]) in (0, 1)
    out = capsys.readouterr().out
    assert "No verdict changes with this change" in out
    assert out.index("#### Every other model") < out.index("| `qwen2-72b-tenanta` | **evicts** |")
