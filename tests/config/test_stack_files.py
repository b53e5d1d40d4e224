"""Stack and project files are read exactly as the Pulumi CLI reads them (go-yaml v3), and what
YAML gets wrong is a config error at its key path, never silently resolved."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from config.stack_file.yaml12 import MAX_FILE_BYTES, StackYamlError, read_yaml, resolve_scalar
from offline.render import render_stack
from tests.conftest import PROJECT_DIR

DEV = (PROJECT_DIR / "Pulumi.dev.yaml").read_text()


# What go-yaml v3's resolve() gives for plain scalars decoded into untyped values (the CLI's view).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("N", "N"),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("017", 15),  # leading-zero octal, kept by go-yaml v3 for compatibility
        ("0o17", 15),
        ("0x1F", 31),
        ("-0b101", -5),
        ("1_000", 1000),
        ("08", 8.0),  # not octal, so a float
        ("1:30", "1:30"),  # no sexagesimal numbers
        ("2024-01-01", "2024-01-01"),  # timestamps stay text
        (".5", 0.5),
        ("1e3", 1000.0),
        ("+5", 5),
        ("~", None),
        ("", None),
        ("Null", None),
        ("18446744073709551615", 2**64 - 1),
        ("-9223372036854775809", -9.223372036854775809e18),
        ("1.5e", "1.5e"),
        # Beyond float64, Go's ParseFloat fails and go-yaml falls back to text.
        ("1e400", "1e400"),
        ("-1e400", "-1e400"),
        ("9" * 5000, "9" * 5000),
        ("0x" + "f" * 40, "0x" + "f" * 40),
    ],
)
def test_scalars_resolve_as_the_pulumi_cli_resolves_them(text: str, expected: Any) -> None:
    value = resolve_scalar(text)[1]
    assert value == expected and type(value) is type(expected)
    if re.fullmatch(r"[+-]?0[0-9_]*[0-9]", text):  # read as the CLI reads it, then refused (below)
        with pytest.raises(StackYamlError):
            read_yaml(f"v: {text}\n".encode())
    else:
        assert read_yaml(f"v: {text}\n".encode())["v"] == expected


@pytest.mark.parametrize(
    ("text", "message", "fix"),
    [
        ("0600", "reads it as 384 (octal)", '`384` for the number the CLI reads, `0o600` to keep it octal or `"0600"`'),
        ("08", "reads it as 8.0", '`8` for the number the CLI reads or `"08"` (quoted) for text'),
        ("-017", "reads it as -15 (octal)", "`-0o17` to keep it octal"),
    ],
)
def test_numbers_with_a_leading_zero_are_refused_at_their_key(text: str, message: str, fix: str) -> None:
    with pytest.raises(StackYamlError) as caught:
        read_yaml(f"models:\n  m:\n    startup: {{loadTimeoutSeconds: {text}}}\n".encode())
    (problem,) = caught.value.problems
    assert problem.path == "models.m.startup.loadTimeoutSeconds"
    assert message in problem.message and fix in problem.fix


def test_zero_quoted_numbers_and_octal_prefixes_are_not_leading_zeros() -> None:
    assert read_yaml(b"a: 0\nb: '0600'\nc: 0o600\nd: 0.5\ne: 0x1F\n") == {
        "a": 0,
        "b": "0600",
        "c": 384,
        "d": 0.5,
        "e": 31,
    }


def test_special_floats_and_quoted_scalars() -> None:
    assert math.isinf(resolve_scalar(".inf")[1]) and math.isnan(resolve_scalar(".NaN")[1])
    assert read_yaml(b"a: \"017\"\nb: 'true'\n") == {"a": "017", "b": "true"}


def _render(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    out = tmp_path / "out"
    code = main(["render", "--stack", "case", "--config-file", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code != 0:
        assert not out.exists()
    return code, err


def _error_paths(err: str) -> list[str]:
    return [line[4:].split(": ", 1)[0] for line in err.splitlines() if line.startswith("  - ")]


def test_yaml_1_1_booleans_fail_at_their_key_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = DEV + "  volcano-platform:volcano:\n    protect: yes\n"
    code, err = _render(tmp_path, text, capsys)
    assert code == 2 and _error_paths(err) == ["volcano.protect"]
    assert "write `true`" in err and "YAML 1.2" in err


def test_a_namespace_called_no_is_the_string_no(tmp_path: Path) -> None:
    text = DEV.replace(
        "  volcano-platform:tenants:\n    team-a:\n",
        "  volcano-platform:tenants:\n    team-a:\n      namespaces: [no]\n",
    )
    text = text.replace("      tenant: team-a\n", "      tenant: team-a\n      namespace: no\n")
    path = tmp_path / "Pulumi.no.yaml"
    path.write_text(text)
    result = render_stack(PROJECT_DIR, "no", path)
    assert result.rendered.find("Namespace", "no").manifest["metadata"]["name"] == "no"
    assert result.rendered.find("Deployment", "qwen3-0-6b", "no")


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        (
            DEV.replace("      tenant: team-a\n", "      tenant: team-a\n      replicas: 1\n      replicas: 2\n"),
            "models.qwen3-0-6b.replicas",
            "written twice (lines",
        ),
        (DEV + "  models:\n    other: {}\n", "models", "written twice, as `volcano-platform:models` and as `models`"),
        (DEV + "  volcano:cluster:\n    name: x\n", "config.volcano:cluster", "write it as `volcano-platform:cluster`"),
        (DEV + "  kubernetes:context: prod\n", "config.kubernetes:context", "`volcano-platform:cluster.context`"),
        (DEV + "  volcano-platfrom:models: {}\n", "config.volcano-platfrom:models", "write it as"),
    ],
    ids=["duplicate-key", "section-twice", "foreign-project-prefix", "default-provider-key", "misspelt-prefix"],
)
def test_what_yaml_gets_wrong_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, path: str, words: str
) -> None:
    code, err = _render(tmp_path, text, capsys)
    assert code == 2 and path in _error_paths(err), err
    assert words in err


def test_files_that_are_not_utf8_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _render(tmp_path, DEV.encode() + b"# caf\xe9\n", capsys)  # type: ignore[arg-type]
    assert code == 2 and "not UTF-8 (byte 0xe9 on line" in err


def test_deep_nesting_is_refused_without_a_recursion_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = DEV + "  volcano-platform:volcano:\n    values: " + "[" * 5000 + "]" * 5000 + "\n"
    code, err = _render(tmp_path, text, capsys)
    assert code == 2 and "nested more than 64 levels" in err
    assert _error_paths(err)[0].startswith("volcano.values")


def test_an_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """Nine levels of ten aliases each would expand to 10^10 values under `volcano.values`; run in
    a subprocess with a timeout, so a regression fails instead of hanging the suite."""
    lines = ["      l0: &l0 [a, a, a, a, a, a, a, a, a, a]"]
    lines += [f"      l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 10)]
    text = DEV + "  volcano-platform:volcano:\n    values:\n" + "\n".join(lines) + "\n"
    path = tmp_path / "Pulumi.bomb.yaml"
    path.write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "offline",
            "render",
            "--stack",
            "bomb",
            "--config-file",
            str(path),
            "--out",
            str(tmp_path),
        ],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "aliases expand to more than" in proc.stderr
    assert "volcano.values.l" in proc.stderr and "Traceback" not in proc.stderr


def test_files_beyond_the_size_limit_name_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _render(tmp_path, DEV + "#" * MAX_FILE_BYTES + "\n", capsys)
    assert code == 2 and f"{MAX_FILE_BYTES:,} bytes" in err


def test_plain_aliases_still_work() -> None:
    data = read_yaml(b"a: &x {k: 1}\nb: *x\nc:\n  <<: *x\n  j: 2\n")
    assert data == {"a": {"k": 1}, "b": {"k": 1}, "c": {"k": 1, "j": 2}}


def test_decimals_written_by_pulumi_config_set_path_load_as_numbers(tmp_path: Path) -> None:
    """`pulumi config set --path 'models.qwen3-0-6b.engine.gpuMemoryUtilization' 0.85` stores the
    string "0.85" (the CLI types only integers and booleans); it is the number the user meant."""
    text = DEV.replace("gpuMemoryUtilization: 0.9", 'gpuMemoryUtilization: "0.85"')
    path = tmp_path / "Pulumi.cli.yaml"
    path.write_text(text)
    deployment = render_stack(PROJECT_DIR, "cli", path).rendered.find("Deployment", "qwen3-0-6b", "team-a")
    args = deployment.manifest["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.85"


def test_a_quoted_scheduler_number_names_the_typed_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = DEV + (
        "  volcano-platform:volcano:\n    scheduler:\n      plugins:\n"
        '        binpack: {arguments: {custom.factor: "1.5"}}\n'
    )
    code, err = _render(tmp_path, text, capsys)
    assert code == 2 and "pulumi config set --path --type float" in err


def test_read_yaml_rejects_broken_syntax_with_a_line() -> None:
    with pytest.raises(StackYamlError) as caught:
        read_yaml(b"a: [1, 2\nb: 3\n")
    assert "not valid YAML at line" in str(caught.value)
