"""The bad-input corpus: every file in tests/bad_configs/ is a complete stack file whose first line
is `# expect: <key.path>`. Rendering it must exit 2 with an error naming that key, and no traceback."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from cli.main import main

CORPUS = sorted((Path(__file__).parents[1] / "bad_configs").glob("*.yaml"))


def _expected(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name}: first line must be `# expect: <key.path>`"
    return first.removeprefix("# expect: ").strip()


def test_corpus_is_large_and_covers_every_section() -> None:
    assert len(CORPUS) >= 200
    sections = Counter(_expected(p).split(".")[0].split("[")[0] for p in CORPUS)
    assert set(sections) >= {
        "cluster",
        "volcano",
        "lws",
        "topology",
        "priorityClasses",
        "tenants",
        "defaultQueue",
        "modelDefaults",
        "models",
        "registries",
        "secrets",
        "observability",
    }


@pytest.mark.slow  # 401 whole-program renders: `make test`, as the risky corpus
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_bad_config_is_rejected_with_its_key_path(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _expected(path)
    out = tmp_path / "out"
    code = main(["render", "--stack", "bad", "--config-file", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, f"{path.name}: exit {code}\n{err}"
    assert "Traceback" not in err
    # `<key>: ...`, or `<included file>: <key>: ...` for a key written in an included file.
    errors = [line[4:].split(": ") for line in err.splitlines() if line.startswith("  - ")]
    paths = [parts[1] if parts[0].endswith(".yaml") and len(parts) > 1 else parts[0] for parts in errors]
    assert expected in paths, f"{path.name}: expected an error at `{expected}`, got:\n{err}"
    assert not out.exists(), "nothing may be written for an invalid config"
    for line in (line for line in err.splitlines() if line.startswith("  - ")):
        # Every error says what to do (`...; <fix>`), in the platform's words, never pydantic's.
        assert "; " in line.rsplit(" (got ", 1)[-1], f"{path.name}: no fix in: {line}"
        assert not re.search(r"should (be|match|have)|pattern '", line), f"{path.name}: validator text in: {line}"
