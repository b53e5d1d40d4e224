"""Finding or building the `volcano-session` program.

The binary is cached under a name made from the hash of every file its build reads (`go.mod`,
`go.sum`, the Go sources, the build script), so a change to any of them builds anew and an
unchanged checkout reuses it. Building needs Go and the Go module proxy (or a module cache that
already holds Volcano's dependencies); `make volcano-session` does the same ahead of time.
"""

from __future__ import annotations

import sys
from pathlib import Path

from offline.programs.build import GoProgram, ProgramUnavailableError, cache_dir, go_available

SOURCE = Path(__file__).resolve().parents[2] / "volcano-session"
APIS = SOURCE.parent / "volcano-apis"
"""The volcano.sh/apis stand-in every Go module that builds Volcano's code shares."""
PROGRAM = GoProgram("volcano-session", shared=(APIS,), make_target="volcano-session")
EngineUnavailableError = ProgramUnavailableError
"""The real engine cannot be had here; the message says why and what would make it work."""

__all__ = ["APIS", "EngineUnavailableError", "binary_path", "cache_dir", "ensure_built", "go_available"]


def binary_path() -> Path:
    return PROGRAM.binary_path()


def ensure_built(*, build: bool = True) -> Path:
    """The binary, built first if needed (`build=False`: only an existing one)."""
    try:
        return PROGRAM.ensure_built(build=build)
    except ProgramUnavailableError as why:
        if not go_available() and build:
            raise EngineUnavailableError(f"{why} (`--engine model` needs no Go)") from None
        raise


def main(argv: list[str]) -> int:
    return PROGRAM.command(argv, "Go is not installed: the Volcano engine is not built (the what-if uses the model)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
