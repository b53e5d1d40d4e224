"""`diff` reads only render folders that are what a render writes: a damaged folder is an input
error naming the file and entry (exit 2), never a traceback and never a silently shorter diff."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from cli.main import main
from offline.render import render_stack, write_render
from tests.conftest import PROJECT_DIR


@pytest.fixture(scope="module")
def dev_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render") / "dev"
    write_render(render_stack(PROJECT_DIR, "dev"), out)
    return out


def _index(folder: Path) -> list[dict[str, object]]:
    return yaml.safe_load((folder / "resources.yaml").read_text())


def _write_index(folder: Path, items: object) -> None:
    (folder / "resources.yaml").write_text(yaml.safe_dump(items))


def _first_file(folder: Path) -> str:
    return next(str(item["file"]) for item in _index(folder) if item.get("file"))


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "index missing": (lambda f: (f / "resources.yaml").unlink(), "not a render folder"),
    "index not YAML": (lambda f: (f / "resources.yaml").write_text("- [unclosed\n"), "not the YAML"),
    "index a mapping": (lambda f: _write_index(f, {"a": 1}), "must be a list"),
    "entry not a mapping": (lambda f: _write_index(f, [*_index(f), 7]), "is not a mapping"),
    "entry without urn": (lambda f: _write_index(f, [{"type": "x"}, *_index(f)]), "`urn` must be a string"),
    "urn listed twice": (lambda f: _write_index(f, [*_index(f), _index(f)[0]]), "listed twice"),
    "file outside": (
        lambda f: _write_index(f, [{"urn": "u", "type": "t", "file": "../../etc/passwd"}, *_index(f)]),
        "outside the render folder",
    ),
    "absolute file": (
        lambda f: _write_index(f, [{"urn": "u", "type": "t", "file": "/etc/passwd"}, *_index(f)]),
        "outside the render folder",
    ),
    "indexed file missing": (lambda f: (f / _first_file(f)).unlink(), "is missing"),
    "manifest not a mapping": (lambda f: (f / _first_file(f)).write_text("- a\n- b\n"), "not a manifest"),
    "manifest not YAML": (lambda f: (f / _first_file(f)).write_text("a: [\n"), "not a manifest"),
    "manifest not UTF-8": (lambda f: (f / _first_file(f)).write_bytes(b"\xff\xfe"), "not a manifest"),
    "unindexed manifest": (
        lambda f: (f / "manifests" / "Secret.x.y.yaml").write_text("kind: Secret\n"),
        "not in resources.yaml",
    ),
    "summary.json not JSON": (lambda f: (f / "summary.json").write_text("{"), "not the JSON"),
    "summary.json wrong shape": (lambda f: (f / "summary.json").write_text(json.dumps({"models": []})), "must be"),
    "summary.json entry wrong": (
        lambda f: (f / "summary.json").write_text(
            json.dumps({"models": {"m": 1}, "tenants": {}, "domains": {}, "warnings": []})
        ),
        "must be a JSON object",
    ),
    "linked manifest": (
        lambda f: ((f / _first_file(f)).unlink(), (f / _first_file(f)).symlink_to("/etc/hostname")),
        "outside the render folder",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
@pytest.mark.parametrize("markdown", [False, True], ids=["text", "markdown"])
def test_a_damaged_render_folder_is_an_input_error(
    damage: str, markdown: bool, dev_render: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(dev_render, broken, symlinks=True)
    change, message = DAMAGE[damage]
    change(broken)
    code = main(["diff", str(dev_render), str(broken), *(["--markdown"] if markdown else [])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    assert message in err


def test_a_change_that_removes_most_objects_is_flagged_at_the_top(
    dev_render: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nearly_empty = tmp_path / "nearly-empty"
    shutil.copytree(dev_render, nearly_empty)
    items = _index(nearly_empty)
    kept = [item for item in items if not item.get("file") or "Namespace" in str(item["file"])]
    for item in items:
        if item not in kept:
            (nearly_empty / str(item["file"])).unlink()
    _write_index(nearly_empty, kept)
    assert main(["diff", str(dev_render), str(nearly_empty)]) == 1
    assert capsys.readouterr().out.startswith("MOST OBJECTS REMOVED: this change removes")
    assert main(["diff", str(dev_render), str(nearly_empty), "--markdown"]) == 1
    assert capsys.readouterr().out.startswith("> **MOST OBJECTS REMOVED")
    assert main(["diff", str(dev_render), str(dev_render)]) == 0
    assert "MOST OBJECTS" not in capsys.readouterr().out


def test_an_empty_folder_is_an_empty_render(
    dev_render: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stack that did not exist at the base revision: everything is added.
    (tmp_path / "empty").mkdir()
    assert main(["diff", str(tmp_path / "empty"), str(dev_render)]) == 1
    assert " added, 0 changed, 0 replaced, 0 removed" in capsys.readouterr().out
