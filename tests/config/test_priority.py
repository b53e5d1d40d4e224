"""PriorityClasses: the default set, overrides, and the single-global-default rule."""

from __future__ import annotations

from typing import Any

from offline.schemas import validate_objects
from tests.conftest import load, mutate, paths_of, stack_raw

DEV = stack_raw("dev")


def test_default_set_for_inference_and_training(committed_render: Any) -> None:
    result = committed_render("dev")
    classes = {o.name: o.manifest for o in result.rendered.by_kind("PriorityClass")}
    assert list(classes) == ["p0-critical", "p1-high", "p2-normal", "p3-low"]
    assert classes["p0-critical"]["value"] == 1_000_000
    assert classes["p0-critical"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert classes["p3-low"]["preemptionPolicy"] == "Never"
    assert not any(c["globalDefault"] for c in classes.values())
    assert validate_objects(result.rendered.by_kind("PriorityClass"), "1.33").issues == []


def test_stack_config_replaces_the_set(render_raw: Any) -> None:
    raw = mutate(
        DEV,
        lambda r: r.update(
            priorityClasses={
                "serving": {"value": 500000, "description": "online"},
                "batch": {"value": 100, "preemptionPolicy": "Never", "globalDefault": True},
            }
        ),
    )
    raw["models"]["qwen3-0-6b"]["priorityClass"] = "serving"
    result = render_raw(raw)
    classes = {o.name: o.manifest for o in result.rendered.by_kind("PriorityClass")}
    assert set(classes) == {"serving", "batch"}
    assert classes["batch"]["globalDefault"] is True and classes["serving"]["description"] == "online"


def test_at_most_one_global_default() -> None:
    raw = mutate(
        DEV,
        lambda r: r.update(
            priorityClasses={"p2-normal": {"value": 1, "globalDefault": True}, "b": {"value": 2, "globalDefault": True}}
        ),
    )
    assert paths_of(raw) == ["priorityClasses.b.globalDefault"]


def test_names_and_values_are_checked() -> None:
    raw = mutate(
        DEV,
        lambda r: r.update(
            priorityClasses={"p2-normal": {"value": 1}, "system-high": {"value": 2}, "huge": {"value": 2_000_000_000}}
        ),
    )
    assert set(paths_of(raw)) == {"priorityClasses.system-high", "priorityClasses.huge.value"}


def test_immutable_fields_replace_the_class(committed_render: Any) -> None:
    entry = next(e for e in committed_render("dev").rendered.index if e["urn"].endswith("::priority-p0-critical"))
    assert entry["replaceOnChanges"] == ["value", "preemptionPolicy"] and entry["deleteBeforeReplace"] is True


def test_unknown_priority_class_reference() -> None:
    raw = mutate(DEV, lambda r: r["models"]["qwen3-0-6b"].update(priorityClass="p9"))
    problems = paths_of(raw)
    assert problems == ["models.qwen3-0-6b.priorityClass"]
    assert load(DEV).priority_classes["p2-normal"].value == 10_000
