"""The command line: one tool with one parser, every option described, one set of exit codes, and the
earlier spellings still working for this release."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from cli.exit import INTERNAL_ERROR, INVALID_INPUT
from cli.main import TOOL, build_parser, main
from tests.conftest import PROJECT_DIR
from tests.conftest import TOOL as TOOL_COMMAND

COMMANDS = ("render", "diff", "check", "preflight", "import-topology")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_users_run_is_a_subcommand() -> None:
    assert set(COMMANDS) <= set(_subparsers(build_parser()))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_is_described_and_every_command_has_an_example(command: str) -> None:
    parser = _subparsers(build_parser())[command]
    for action in parser._actions:
        assert action.help and action.help != argparse.SUPPRESS, f"{command} {action.option_strings}: no help"
    help_text = parser.format_help()
    assert f"examples:\n  {TOOL} {command} " in help_text
    assert "exit codes:" in help_text and "3 internal error" in help_text


def test_the_console_script_is_installed_and_answers_help() -> None:
    script = Path(sys.executable).parent / TOOL
    assert script.is_file(), "`make` installs the project (pip install -e .), which puts the command in .venv/bin"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=False, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert all(command in proc.stdout for command in COMMANDS)


def test_an_unexpected_exception_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr("offline.render.render_stack", broken)
    assert main(["render", "--stack", "dev"]) == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error: internal error (KeyError: 'a bug')") and "report it" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_traceback_is_there_for_developers_who_ask(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr("offline.render.render_stack", broken)
    monkeypatch.setenv("VOLCANO_PLATFORM_TRACEBACK", "1")
    assert main(["render", "--stack", "dev"]) == INTERNAL_ERROR
    assert "Traceback" in capsys.readouterr().err


def test_arguments_that_do_not_fit_together_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--stack", "dev"]) == INVALID_INPUT
    assert capsys.readouterr().err == "error: diff --stack needs --base <git-rev>\n"
    assert main(["import-topology"]) == INVALID_INPUT
    with pytest.raises(SystemExit) as parsed:
        main(["render"])
    assert parsed.value.code == INVALID_INPUT


@pytest.mark.parametrize("spelling", ["offline", "live"])
def test_the_earlier_spellings_still_work_and_say_they_are_deprecated(spelling: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", spelling, "render", "--stack", "dev", "--out", str(tmp_path)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"`python -m {spelling}` is deprecated; run `{TOOL} <command>`" in proc.stderr
    assert (tmp_path / "summary.md").is_file()


def test_the_installed_command_renders_from_any_directory(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*TOOL_COMMAND, "render", "--stack", "dev", "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "manifests").is_dir()


def test_a_missing_tool_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import require_tool

    assert require_tool("/usr/bin/promtool", "promtool") == "/usr/bin/promtool"
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="make tools"):
        require_tool(None, "promtool")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="promtool is not installed"):
        require_tool(None, "promtool")


def test_a_sandbox_that_cannot_be_built_is_one_line_not_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sandbox.session
    from sandbox.programs import BuildError

    def no_go(*_: object) -> dict[str, Path]:
        raise BuildError("Go 1.26 is not installed: the sandbox builds its programs from their Go modules")

    monkeypatch.setenv("VOLCANO_PLATFORM_SANDBOX_DIR", str(tmp_path))
    monkeypatch.setattr(sandbox.session, "programs", no_go)
    assert main(["sandbox", "up", "--stack", "dev"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: Go 1.26 is not installed: the sandbox builds its programs from their Go modules"
