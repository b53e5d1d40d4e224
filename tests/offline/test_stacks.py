"""The committed stacks: golden renders, what each stack is, and reviewable changes."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest

from offline.render import write_render
from offline.review import diff_dirs
from tests.conftest import EXAMPLE_STACKS, PROJECT_DIR, STACKS, mutate, stack_raw

GOLDEN = PROJECT_DIR / "tests" / "golden"


def _files(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_render_matches_the_reviewed_golden_files(stack: str, committed_render: Any, tmp_path: Path) -> None:
    write_render(committed_render(stack), tmp_path)
    rendered, golden = _files(tmp_path), _files(GOLDEN / stack)
    hint = f"if the change is intended, run `make golden` and review the diff of tests/golden/{stack}"
    assert sorted(rendered) == sorted(golden), f"files differ: {sorted(set(rendered) ^ set(golden))}; {hint}"
    for name, text in rendered.items():
        if text != golden[name]:
            excerpt = "".join(
                list(
                    difflib.unified_diff(
                        golden[name].splitlines(True), text.splitlines(True), f"golden/{name}", f"render/{name}"
                    )
                )[:40]
            )
            pytest.fail(f"{name} differs from the golden file; {hint}\n{excerpt}")


def test_the_examples_and_only_they_have_golden_files() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == sorted(EXAMPLE_STACKS)
    assert set(EXAMPLE_STACKS) <= set(STACKS)
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert f"EXAMPLES := {' '.join(EXAMPLE_STACKS)}" in makefile, "the Makefile's `golden` renders the same list"


def test_dev_is_a_small_offline_cluster(committed_render: Any) -> None:
    spec = committed_render("dev").spec
    assert spec.topology is not None and len(spec.topology.node_gpus) <= 8
    assert len(spec.topology.at_tier(1)) == 1 and spec.topology.top_tier == 1
    assert list(spec.tenants) == ["team-a"]
    (model,) = spec.models.values()
    assert not model.multi_node and model.gpus_per_pod == 1


def test_example_cluster_is_the_seed_articles(committed_render: Any) -> None:
    spec = committed_render("aicloud-a").spec
    config = spec.config
    assert config.volcano.protect and config.lws.protect
    assert config.cluster.mirror.registry == "10.8.17.100:60066"
    assert spec.topology is not None and spec.topology.hyper_nodes == "discovery"
    assert len(spec.topology.node_gpus) == 128
    assert {d.name: d.node_count for d in spec.topology.domains.values()} == {
        "spinepair12": 128,
        "leafpair12": 64,
        "leafpair34": 64,
    }
    assert spec.tenants["tenanta"].namespaces == ("a01",)
    tenantb = spec.tenants["tenantb"].config.queue
    assert tenantb.reclaimable and tenantb.capability != tenantb.deserved  # can borrow, gets reclaimed
    assert "p0-critical" in spec.priority_classes and len(spec.priority_classes) > 1
    assert spec.models["qwen2-72b-tenanta"].multi_node and not spec.models["qwen8b-preemptor"].multi_node
    for model in spec.models.values():
        assert model.config.image.startswith("10.8.17.100:60066/")


def test_adding_a_model_changes_only_that_models_objects(tmp_path: Path, render_raw: Any) -> None:
    raw = stack_raw("aicloud-a")
    added = mutate(
        raw,
        lambda r: r["models"].update(
            {
                "llama-8b": {
                    "tenant": "tenantb",
                    "source": {"model": "Llama-3.1-8B"},
                    "priorityClass": "p3-low",
                    "resources": {"gpus": 1, "cpu": 8, "memory": "32Gi"},
                    "shmSizeGi": 4,
                }
            }
        ),
    )
    write_render(render_raw(raw), tmp_path / "old")
    write_render(render_raw(added), tmp_path / "new")
    result, text = diff_dirs(tmp_path / "old", tmp_path / "new")
    assert result.added == [
        "manifests/Deployment.b01.llama-8b.yaml",
        "manifests/Secret.b01.mars-registry.yaml",  # its image pull secret, first used in b01
        "manifests/Service.b01.llama-8b.yaml",
    ]
    assert not (result.changed or result.replaced or result.removed), text
