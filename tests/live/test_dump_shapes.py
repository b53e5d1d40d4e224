"""Malformed cluster dumps are refused with the item and field named (exit 2), by `preflight` and
`import-topology` alike, never a crash."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from live.cluster_state import StateError, read_file
from live.preflight import markdown as preflight_markdown
from live.preflight import preflight
from whatif.predict import predict
from whatif.report import markdown as whatif_markdown

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {"a": "b"}}}

HYPER_NODE = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "spine-a"}}
CASES: dict[str, tuple[bytes, str]] = {
    "an item that is not a mapping": (json.dumps({"items": [NODE, 7]}).encode(), "items[1] is not an object"),
    "items that are not a list": (json.dumps({"kind": "List", "items": {"a": 1}}).encode(), "items must be a list"),
    "metadata missing": (json.dumps({"items": [{"apiVersion": "v1", "kind": "Node"}]}).encode(), "items[0].metadata"),
    "metadata of the wrong type": (
        json.dumps({"items": [{**NODE, "metadata": "gpu-1"}]}).encode(),
        "items[0].metadata: must be a mapping",
    ),
    "a name that is not a string": (
        json.dumps({"items": [{**NODE, "metadata": {"name": 5}}]}).encode(),
        "items[0].metadata.name: must be a string",
    ),
    "a node name that is not a DNS name": (
        json.dumps({"items": [{**NODE, "metadata": {"name": "GPU_1!"}}]}).encode(),
        "must be a DNS subdomain name",
    ),
    "a label that is not a string": (
        json.dumps({"items": [{**NODE, "metadata": {"name": "gpu-1", "labels": {"a": 1}}}]}).encode(),
        "items[0].metadata.labels.a: must be a string",
    ),
    "an allocatable that is not a quantity": (
        json.dumps({"items": [{**NODE, "status": {"allocatable": {"nvidia.com/gpu": "lots"}}}]}).encode(),
        "must be a Kubernetes quantity",
    ),
    "taints that are not a list": (
        json.dumps({"items": [{**NODE, "spec": {"taints": "NoSchedule"}}]}).encode(),
        "items[0].spec.taints: must be a list of mappings",
    ),
    "HyperNode members that are not mappings": (
        json.dumps(
            {"items": [{**HYPER_NODE, "spec": {"tier": 2, "members": ["leaf-a"]}}]},
        ).encode(),
        "items[0].spec.members: must be a list of mappings",
    ),
    "a HyperNode member named by a number": (
        json.dumps(
            {
                "items": [
                    {
                        **HYPER_NODE,
                        "spec": {"members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": 3}}}]},
                    }
                ]
            },
        ).encode(),
        "items[0].spec.members[0].selector.exactMatch.name: must be a string",
    ),
    "a Deployment with no container": (
        json.dumps(
            {
                "items": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {"name": "volcano-scheduler", "namespace": "volcano-system"},
                        "spec": {"template": {"spec": {"containers": []}}},
                    }
                ]
            }
        ).encode(),
        "items[0].spec.template.spec.containers: must list at least one container",
    ),
    "deep nesting": (("[" * 100_000 + "]" * 100_000).encode(), "nests values deeper"),
    "bytes that are not UTF-8": (b"\xff\xfe\x00", "cannot read"),
    "not a List": (b'"just text"', "is not a Kubernetes List"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("command", ["preflight", "import-topology"])
def test_a_malformed_dump_is_refused_naming_where(
    case: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, message = CASES[case]
    dump = tmp_path / "cluster.json"
    dump.write_bytes(data)
    args = ["--stack", "dev"] if command == "preflight" else ["--tiers", "topology.example.com/leaf"]
    code = main([command, *args, "--from", str(dump)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "internal error" not in err and "Traceback" not in err


QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team-a"}}
PRIORITY = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p1"}}
POD_GROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pg", "namespace": "team-a"},
}


def _member(pattern: str) -> dict[str, object]:
    return {
        **HYPER_NODE,
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}]},
    }


# Values the what-if reads, each as the API server (or Volcano's webhook) would refuse it.
VALUES: dict[str, tuple[dict[str, object], str]] = {
    "a queue weight that is text": ({**QUEUE, "spec": {"weight": "NaN"}}, "items[0].spec.weight: must be an integer"),
    "a queue weight of 0": ({**QUEUE, "spec": {"weight": 0}}, "items[0].spec.weight: must be an integer from 1"),
    "a queue priority that is empty": ({**QUEUE, "spec": {"priority": ""}}, "items[0].spec.priority"),
    "a deserved share that is no quantity": (
        {**QUEUE, "spec": {"deserved": {"nvidia.com/gpu": "1/2"}}},
        "items[0].spec.deserved[nvidia.com/gpu]",
    ),
    "a guarantee that is a list": (
        {**QUEUE, "spec": {"guarantee": {"resource": {"nvidia.com/gpu": []}}}},
        "items[0].spec.guarantee.resource[nvidia.com/gpu]",
    ),
    "a priority class without a value": ({**PRIORITY}, "items[0].value: must be given"),
    "a priority class value past int32": ({**PRIORITY, "value": 2**40}, "items[0].value: must be an integer"),
    "a highest tier that is text": (
        {**POD_GROUP, "spec": {"networkTopology": {"highestTierAllowed": "1/2"}}},
        "items[0].spec.networkTopology.highestTierAllowed",
    ),
    "a task minimum that is text": (
        {**POD_GROUP, "spec": {"minTaskMember": {"worker": "two"}}},
        "items[0].spec.minTaskMember.worker",
    ),
    "a HyperNode tier that is text": ({**HYPER_NODE, "spec": {"tier": "leaf"}}, "items[0].spec.tier"),
    "a regex Go cannot compile (look-behind)": (
        _member("(?<=gpu)-1"),
        "items[0].spec.members[0].selector.regexMatch.pattern: not a regular expression Volcano's Go code compiles",
    ),
}


@pytest.mark.parametrize("case", VALUES, ids=list(VALUES))
def test_a_value_the_what_if_reads_is_checked_as_the_api_server_would(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    obj, message = VALUES[case]
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"kind": "List", "items": [obj]}))
    code = main(["whatif", "--stack", "dev", "--from", str(dump), "--engine", "model"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "internal error" not in err


def _hypernodes(*specs: tuple[str, list[str]]) -> list[dict[str, object]]:
    return [
        {
            **HYPER_NODE,
            "metadata": {"name": name},
            "spec": {
                "tier": 2,
                "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": m}}} for m in members],
            },
        }
        for name, members in specs
    ]


@pytest.mark.parametrize(
    ("hypernodes", "cycle"),
    [
        (_hypernodes(("a", ["a"])), "(a -> a)"),
        (_hypernodes(("a", ["b"]), ("b", ["c"]), ("c", ["a"])), "(a -> b -> c -> a)"),
    ],
)
def test_hypernode_members_that_form_a_cycle_are_refused(
    hypernodes: list[dict[str, object]], cycle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"kind": "List", "items": [NODE, *hypernodes]}))
    code = main(["whatif", "--stack", "dev", "--from", str(dump), "--engine", "model"])
    err = capsys.readouterr().err
    assert code == 2 and f"HyperNode members form a cycle {cycle}" in err, err


def test_a_chain_of_hypernodes_of_any_depth_is_read() -> None:
    from whatif.scenario import hypernodes_of

    items = [
        {"name": f"h{i}", "tier": i + 1, "members": [{"type": "HyperNode", "name": f"h{i - 1}"}]}
        for i in range(1, 5000)
    ]
    items.append({"name": "h0", "tier": 1, "members": [{"type": "Node", "name": "gpu-1"}]})
    assert hypernodes_of(items)["h4999"].nodes == frozenset({"gpu-1"})


def test_regex_members_match_as_go_finds_them() -> None:
    """Unanchored, as `regexp.MatchString` (volcano pkg/scheduler/api/hyper_node_info.go
    `GetMembers`), and linear in time: a pattern that backtracks for ever in Python's `re` answers
    at once."""
    import time

    from config.schema.go_regexp import finds

    assert finds("worker-1", "gpu-worker-12") and not finds("^worker-1", "gpu-worker-12")
    assert not finds("(?<=a)b", "ab"), "a pattern Go refuses selects no node"
    started = time.monotonic()
    assert not finds("(a+)+$", "a" * 40 + "!")
    assert time.monotonic() - started < 1


RECORDED = Path(__file__).parents[1] / "fixtures" / "cluster" / "whatif" / "aicloud-a-preempt.yaml"


def _fields(value: object, path: tuple[object, ...] = (), depth: int = 3) -> Iterator[tuple[object, ...]]:
    """Every field down to `depth` levels (the first item of a list)."""
    if depth == 0:
        return
    children = (
        value.items() if isinstance(value, dict) else [(0, value[0])] if isinstance(value, list) and value else []
    )
    for key, child in children:
        yield (*path, key)
        yield from _fields(child, (*path, key), depth - 1)


def _nulled(data: dict[str, Any], index: int, path: tuple[object, ...]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    target = out["items"][index]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = None
    return out


@pytest.mark.slow
def test_null_anywhere_in_a_recorded_dump_is_read_as_absent_never_a_crash(
    tmp_path: Path, committed_render: Callable[[str], Any]
) -> None:
    """Each field of the first object of each kind in a recorded dump set to null in turn (a
    `status: null`, a CRD's `spec: null`, ...): preflight and the what-if read null as the API
    server does, as absent, and end with a report or an input error naming the item (what the
    commands say with exit 2), never another exception (an internal error)."""
    render = committed_render("aicloud-a")
    data = yaml.safe_load(RECORDED.read_text())
    firsts = {item["kind"]: index for index, item in reversed(list(enumerate(data["items"])))}
    dump = tmp_path / "cluster.json"
    crashes = []
    tried = 0
    for kind, index in sorted(firsts.items()):
        for path in _fields(data["items"][index]):
            if path in (("kind",), ("apiVersion",)):
                continue
            dump.write_text(json.dumps(_nulled(data, index, path)))
            tried += 1
            try:
                state = read_file(dump)
            except StateError:
                continue
            try:
                preflight_markdown(preflight(render.spec, render.rendered, state))
                whatif_markdown(predict(state, render.spec, render.rendered))
            except Exception as error:
                crashes.append(f"{kind} {'.'.join(map(str, path))}: {error!r}")
    assert tried > 60 and not crashes, crashes
