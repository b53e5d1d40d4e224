"""Sending cases to `volcano-session` and reading its answers.

A session spends most of its time waiting for the fake informers of Volcano's scheduler cache to
report synced (client-go polls every 100 ms), not computing, so cases are spread over several
processes at once. Each process reads its cases from a file and writes answers to another, which
keeps a slow reader from ever blocking a writer.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from whatif.volcano.build import ensure_built

PROCESSES = 6
TIMEOUT_SECONDS = 1800.0


class EngineError(Exception):
    """The program failed or answered something unreadable; the message has its last words."""


def run_cases(
    cases: list[dict[str, Any]],
    *,
    processes: int = PROCESSES,
    timeout: float = TIMEOUT_SECONDS,
    binary: Path | None = None,
) -> list[dict[str, Any]]:
    """One answer per case, in order (`volcano-session/case.go` describes both)."""
    if not cases:
        return []
    program = binary or ensure_built()
    chunks = [cases[i::processes] for i in range(min(processes, len(cases)))]
    answers: list[dict[str, Any]] = [{} for _ in cases]
    with tempfile.TemporaryDirectory() as scratch:
        running = []
        for index, chunk in enumerate(chunks):
            stdin = Path(scratch) / f"{index}.in"
            stdin.write_text("".join(json.dumps(c, separators=(",", ":")) + "\n" for c in chunk))
            out, err = Path(scratch) / f"{index}.out", Path(scratch) / f"{index}.err"
            with stdin.open("rb") as i, out.open("wb") as o, err.open("wb") as e:
                running.append((subprocess.Popen([str(program)], stdin=i, stdout=o, stderr=e), out, err))
        deadline = time.monotonic() + timeout
        try:
            for index, (process, out, err) in enumerate(running):
                try:
                    code = process.wait(timeout=max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired as expired:
                    raise EngineError(f"volcano-session answered nothing in {timeout:.0f} s") from expired
                lines = out.read_text().splitlines()
                if code != 0 or len(lines) != len(chunks[index]):
                    tail = "\n".join(err.read_text(errors="replace").strip().splitlines()[-8:])
                    raise EngineError(f"volcano-session exited {code} after {len(lines)} answers:\n{tail}")
                for position, line in enumerate(lines):
                    answers[index + position * len(chunks)] = json.loads(line)
        finally:
            for process, _, _ in running:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    return answers
