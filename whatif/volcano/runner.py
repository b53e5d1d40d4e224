"""Sending cases to `volcano-session` and reading its answers.

A session spends most of its time waiting for the fake informers of Volcano's scheduler cache to
report synced (client-go polls every 100 ms), not computing, so cases are spread over several
processes at once, a bounded batch each. Each process reads its cases from a file and writes answers
to another, which keeps a slow reader from ever blocking a writer.
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
BATCH = 25
"""Cases per process: Volcano keeps state per job across sessions (metric series among it), so a
process grows with the cases it answers; a fresh one per batch keeps each small."""
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
    batches = [list(range(i, min(i + BATCH, len(cases)))) for i in range(0, len(cases), BATCH)]
    answers: list[dict[str, Any]] = [{} for _ in cases]
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory() as scratch:
        waiting = list(enumerate(batches))
        running: list[tuple[subprocess.Popen[bytes], list[int], Path, Path]] = []
        try:
            while waiting or running:
                while waiting and len(running) < processes:
                    number, batch = waiting.pop(0)
                    running.append(_start(program, Path(scratch), number, [cases[i] for i in batch], batch))
                done = next((r for r in running if r[0].poll() is not None), None)
                if done is None:
                    if time.monotonic() > deadline:
                        raise EngineError(f"volcano-session answered nothing in {timeout:.0f} s")
                    time.sleep(0.02)
                    continue
                running.remove(done)
                process, batch, out, err = done
                code = process.returncode
                lines = out.read_text().splitlines()
                if code != 0 or len(lines) != len(batch):
                    tail = "\n".join(err.read_text(errors="replace").strip().splitlines()[-8:])
                    raise EngineError(f"volcano-session exited {code} after {len(lines)} answers:\n{tail}")
                for index, line in zip(batch, lines, strict=True):
                    answers[index] = json.loads(line)
        finally:
            for process, _, _, _ in running:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    return answers


def _start(
    program: Path, scratch: Path, number: int, cases: list[dict[str, Any]], batch: list[int]
) -> tuple[subprocess.Popen[bytes], list[int], Path, Path]:
    stdin = scratch / f"{number}.in"
    stdin.write_text("".join(json.dumps(c, separators=(",", ":")) + "\n" for c in cases))
    out, err = scratch / f"{number}.out", scratch / f"{number}.err"
    with stdin.open("rb") as i, out.open("wb") as o, err.open("wb") as e:
        return subprocess.Popen([str(program)], stdin=i, stdout=o, stderr=e), batch, out, err
