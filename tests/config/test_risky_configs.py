"""The dangerous-but-valid corpus: every file in tests/risky_configs/ is a complete stack file whose
first line is `# expect-warning: <key.path>` (it renders, and warns at that key with the risk) or
`# expect: <key.path>` (it is refused there). Nothing is silently accepted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cli.main import main

CORPUS = sorted((Path(__file__).parents[1] / "risky_configs").glob("*.yaml"))


def _expected(path: Path) -> tuple[str, str]:
    first = path.read_text().splitlines()[0]
    for prefix, kind in (("# expect-warning: ", "warning"), ("# expect: ", "error")):
        if first.startswith(prefix):
            return kind, first.removeprefix(prefix).strip()
    raise AssertionError(f"{path.name}: first line must be `# expect-warning: <key.path>` or `# expect: <key.path>`")


def test_corpus_is_large_and_mostly_warnings() -> None:
    kinds = Counter(_expected(p)[0] for p in CORPUS)
    assert len(CORPUS) >= 40 and kinds["warning"] >= 30


@pytest.mark.slow
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_risky_config_is_warned_about_or_refused_at_its_key(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kind, expected = _expected(path)
    out = tmp_path / "out"
    code = main(["render", "--stack", "risky", "--config-file", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if kind == "error":
        assert code == 2, f"{path.name}: exit {code}\n{err}"
        # `<key>: ...`, or `<included file>: <key>: ...` for a key written in an included file.
        errors = [line[4:].split(": ") for line in err.splitlines() if line.startswith("  - ")]
        paths = [parts[1] if parts[0].endswith(".yaml") and len(parts) > 1 else parts[0] for parts in errors]
        assert expected in paths, f"{path.name}: expected an error at `{expected}`, got:\n{err}"
        return
    assert code == 0, f"{path.name}: exit {code}\n{err}"
    warned = [
        line.removeprefix("warning: ").split(": ", 1)[0] for line in err.splitlines() if line.startswith("warning: ")
    ]
    assert expected in warned, f"{path.name}: expected a warning at `{expected}`, got:\n{err}"
    summary = (out / "summary.md").read_text()
    assert f"\n{expected}: " in summary, "the summary lists every warning"
