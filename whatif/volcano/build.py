"""Finding or building the `volcano-session` program, for the release the stack pins or another.

The binary is cached under a name made from the hash of every file its build reads (`go.mod`,
`go.sum`, the Go sources, the build script), so a change to any of them builds anew and an
unchanged checkout reuses it. Building needs Go and the Go module proxy (or a module cache that
already holds Volcano's dependencies); `make volcano-session` does the same ahead of time.

The same sources build against other Volcano releases (`volcano-session/releases/<release>.mod`),
which is how `whatif --upgrade` answers with the scheduling code of the release a cluster runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from offline.programs.build import GoProgram, ProgramUnavailableError, cache_dir, go_available

SOURCE = Path(__file__).resolve().parents[2] / "volcano-session"
APIS = SOURCE.parent / "volcano-apis"
"""The volcano.sh/apis stand-in every Go module that builds Volcano's code shares."""
PINNED_RELEASE = "v1.15.1"
"""The release `volcano-session/go.mod` builds: the one the stack installs (`VOLCANO_PATCHED_IMAGE_TAGS`)."""
RELEASES: tuple[str, ...] = (
    *sorted((p.stem for p in (SOURCE / "releases").glob("*.mod")), key=lambda r: tuple(map(int, r[1:].split(".")))),
    PINNED_RELEASE,
)
"""Every release whose scheduling code the project can build, oldest first."""
PROGRAM = GoProgram("volcano-session", shared=(APIS,), make_target="volcano-session")
EngineUnavailableError = ProgramUnavailableError
"""The real engine cannot be had here; the message says why and what would make it work."""

__all__ = [
    "APIS",
    "PINNED_RELEASE",
    "RELEASES",
    "EngineUnavailableError",
    "binary_path",
    "cache_dir",
    "ensure_built",
    "go_available",
    "program",
]


def program(release: str = PINNED_RELEASE) -> GoProgram:
    """The program built against `release`, one of `RELEASES`."""
    if release not in RELEASES:
        raise ValueError(f"no build of volcano-session for Volcano {release}; there is one for {', '.join(RELEASES)}")
    if release == PINNED_RELEASE:
        return PROGRAM
    return GoProgram("volcano-session", shared=(APIS,), make_target="volcano-releases", release=release)


def binary_path(release: str = PINNED_RELEASE) -> Path:
    return program(release).binary_path()


def ensure_built(*, build: bool = True, release: str = PINNED_RELEASE) -> Path:
    """The binary for `release`, built first if needed (`build=False`: only an existing one)."""
    try:
        return program(release).ensure_built(build=build)
    except ProgramUnavailableError as why:
        if not go_available() and build:
            raise EngineUnavailableError(f"{why} (`--engine model` needs no Go)") from None
        raise


def main(argv: list[str]) -> int:
    """`make volcano-session` (the pinned release) and `make volcano-releases` (`--releases`: every one)."""
    without_go = "Go is not installed: the Volcano engine is not built (the what-if uses the model)"
    if "--releases" not in argv:
        return PROGRAM.command(argv, without_go)
    rest = [arg for arg in argv if arg != "--releases"]
    return max(program(release).command(rest, without_go) for release in RELEASES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
