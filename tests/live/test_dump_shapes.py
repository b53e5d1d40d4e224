"""Malformed cluster dumps are refused with the item and field named (exit 2), by `preflight` and
`import-topology` alike, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main

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
