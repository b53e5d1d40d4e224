"""The machine-readable outputs validate against their schemas in `schema/`: `summary.json` of every
render, `preflight --json` and `import-topology --json`; and the fields tests and tools read are
typed (numbers as numbers, no display strings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cli.main import main
from tests.conftest import EXAMPLE_STACKS, PROJECT_DIR

SCHEMAS = PROJECT_DIR / "schema"
DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster"


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_golden_summary_is_data(stack: str) -> None:
    data = json.loads((PROJECT_DIR / "tests" / "golden" / stack / "summary.json").read_text())
    jsonschema.validate(data, _schema("summary.schema.json"))
    for model in data["models"].values():
        assert isinstance(model["podsPerReplica"], int) and isinstance(model["replicas"]["autoscaled"], bool)
    for tenant in data["tenants"].values():
        assert isinstance(tenant["reclaimable"], bool) and "parent" in tenant


@pytest.mark.parametrize("dump", ["aicloud-a-fresh.yaml", "aicloud-a-problems.yaml", "aicloud-a-handbuilt.yaml"])
def test_preflight_json_is_data_with_every_detail(dump: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["preflight", "--stack", "aicloud-a", "--from", str(DUMPS / dump), "--json"])
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, _schema("preflight.schema.json"))
    assert not [d for f in report["findings"] for d in f["details"] if d.startswith("... and ")]
    assert "None" not in json.dumps(report)


def test_preflight_markdown_lists_the_first_details_and_json_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from live.cluster_state import read_file
    from live.preflight import preflight
    from live.preflight.report import SHOWN, as_json, markdown
    from offline.render import render_stack

    result = render_stack(PROJECT_DIR, "aicloud-a")
    state = read_file(DUMPS / "aicloud-a-fresh.yaml")
    state.nodes = state.nodes[:2]  # 126 of the configured nodes are missing
    report = preflight(result.spec, result.rendered, state)
    (missing,) = [f for f in report.findings if f.check == "nodes-missing"]
    assert len(missing.details) == 126
    assert f"... and {126 - SHOWN} more (all of them in `--json`)" in markdown(report)
    assert len(json.loads(as_json(report))["findings"][0]["details"]) == 126


def test_import_topology_json_is_data(capsys: pytest.CaptureFixture[str]) -> None:
    main(["import-topology", "--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-handbuilt.yaml"), "--json"])
    jsonschema.validate(json.loads(capsys.readouterr().out), _schema("import-topology.schema.json"))
