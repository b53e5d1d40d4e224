"""The stack file's config as the Pulumi CLI hands it to the program, one environment variable
(`PULUMI_CONFIG`) that Linux limits to 128 KiB: measured as the CLI writes it, kept small by
`include`, and refused with the fix before `pulumi preview` would die."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.stack_dir import handover_environment, write_stack_dir
from bench.synthetic import SIZES, synthetic_stack
from cli.main import main
from config.handover import ENVIRONMENT_LIMIT, VARIABLE, handover_bytes
from config.stack_file.reader import read_stack
from tests.conftest import PROJECT_DIR, STACKS, write_stack

LIMIT_FOR_THE_PROJECT = 100 * 1024


def test_the_limit_is_the_kernels() -> None:
    """An environment string of exactly `MAX_ARG_STRLEN` bytes (with its NUL) cannot be passed to
    a program; one byte less can. What `handover_bytes` counts is that string."""
    value = "x" * (ENVIRONMENT_LIMIT - len(VARIABLE) - 2)
    assert handover_bytes({}) == len(VARIABLE) + 1 + 2 + 1
    ok = subprocess.run([sys.executable, "-c", "pass"], env={VARIABLE: value}, check=False)
    assert ok.returncode == 0
    with pytest.raises(OSError) as caught:
        subprocess.run([sys.executable, "-c", "pass"], env={VARIABLE: value + "x"}, check=False)
    assert caught.value.errno == errno.E2BIG


@pytest.mark.parametrize("stack", STACKS)
def test_every_committed_stack_hands_over_little(stack: str) -> None:
    assert handover_bytes(read_stack(PROJECT_DIR, stack).pulumi_config) < LIMIT_FOR_THE_PROJECT


@pytest.mark.slow
@pytest.mark.parametrize("size", list(SIZES))
def test_every_benchmark_size_written_as_a_project_hands_over_little(size: str, tmp_path: Path) -> None:
    path = write_stack_dir(SIZES[size], tmp_path)
    env, handed = handover_environment(path)
    assert handed < LIMIT_FOR_THE_PROJECT
    assert handed >= len(VARIABLE) + 1 + len(env[VARIABLE].encode()) + 1, "what the benchmark hands over is measured"


@pytest.mark.slow
def test_a_stack_whose_inline_config_would_not_start_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inline = synthetic_stack(SIZES["huge"])
    path = write_stack(tmp_path / "Pulumi.inline.yaml", inline)
    code = main(["render", "--stack", "inline", "--config-file", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "  - models: the stack file's config is" in err and "at most 128 KiB" in err
    assert "move `models` into files named under `include`" in err
    handed = json.dumps({f"volcano-platform:{k}": json.dumps(v) for k, v in inline.items()})
    assert len(handed) > ENVIRONMENT_LIMIT, "the stack would really not start"
