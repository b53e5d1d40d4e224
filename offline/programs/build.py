"""Finding or building one of the project's Go programs (`volcano-session/`, `tenant-isolation/`).

Each is a folder holding a Go module of the project's own (`go.mod`, `go.sum`, its `main`) and a
`build.sh` that builds it into the path it is given. The binary is cached under a name made from
the hash of every file its build reads, so a change to any of them builds anew and an unchanged
checkout reuses it. Building needs Go and the Go module proxy (or a module cache that already holds
the modules).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_SECONDS = 3600


class ProgramUnavailableError(Exception):
    """The program cannot be had here; the message says why and what would make it work."""


def cache_dir() -> Path:
    """`$VOLCANO_PLATFORM_CACHE`, else `$XDG_CACHE_HOME/volcano-platform`, else `~/.cache/volcano-platform`."""
    explicit = os.environ.get("VOLCANO_PLATFORM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "volcano-platform"


def go_available() -> bool:
    return shutil.which("go") is not None


@dataclass(frozen=True)
class GoProgram:
    name: str
    """The program's folder in the project, and its binary's name."""
    shared: tuple[Path, ...] = ()
    """Folders outside its own whose files its build also reads."""
    make_target: str = ""
    """The `make` target that builds it ahead of time, for messages."""
    release: str = ""
    """Another build of the same sources, against the module versions of `releases/<release>.mod`
    and `.sum` (the program's folder), which stand for `go.mod` and `go.sum`; empty: `go.mod`'s."""

    @property
    def source(self) -> Path:
        return PROJECT_DIR / self.name

    def source_files(self) -> list[Path]:
        """The files the build reads, in a fixed order."""
        if self.release:
            modules = [self.source / "releases" / f"{self.release}.{ext}" for ext in ("mod", "sum")]
        else:
            modules = [self.source / "go.mod", self.source / "go.sum"]
        found = [*modules, self.source / "build.sh"]
        found += sorted(self.source.glob("*.go")) + [p for folder in self.shared for p in sorted(folder.glob("*"))]
        return found

    def source_hash(self) -> str:
        digest = hashlib.sha256()
        for path in self.source_files():
            digest.update(path.relative_to(PROJECT_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]

    @property
    def label(self) -> str:
        """The program's name, with the release it is built against when that is not go.mod's."""
        return f"{self.name} {self.release}" if self.release else self.name

    def binary_path(self) -> Path:
        release = f"-{self.release}" if self.release else ""
        return cache_dir() / f"{self.name}{release}-{self.source_hash()}"

    def ensure_built(self, *, build: bool = True) -> Path:
        """The binary, built first if needed (`build=False`: only an existing one)."""
        missing = [str(path) for path in self.source_files()[:3] if not path.exists()]
        if missing:
            raise ProgramUnavailableError(f"the Go program {self.label} is missing: {', '.join(missing)}")
        target = self.binary_path()
        if target.exists():
            return target
        if not build:
            how = f"run `make {self.make_target}`" if self.make_target else "build it"
            raise ProgramUnavailableError(f"{self.label} is not built; {how} (it would be {target})")
        if not go_available():
            raise ProgramUnavailableError(f"Go is not installed: {self.label} is built from its Go module")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others then find it built
            if not target.exists():
                self._build(target)
        return target

    def _build(self, target: Path) -> None:
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            out = Path(scratch) / target.name
            try:
                result = subprocess.run(
                    ["bash", str(self.source / "build.sh"), str(out), *([self.release] if self.release else [])],
                    capture_output=True,
                    text=True,
                    timeout=BUILD_TIMEOUT_SECONDS,
                    check=False,
                )
            except subprocess.TimeoutExpired as timeout:
                raise ProgramUnavailableError(f"building {self.label} took over {BUILD_TIMEOUT_SECONDS} s") from timeout
            if result.returncode != 0 or not out.exists():
                tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
                raise ProgramUnavailableError(
                    f"building {self.label} failed (Go and the module proxy are needed):\n{tail}"
                )
            os.replace(out, target)

    def command(self, argv: list[str], without_go: str) -> int:
        """`make <program>`: build (or find) it and print its path; with `--if-go`, a machine
        without Go only prints `without_go` (the tests that need it then skip, or fail in CI)."""
        if "--if-go" in argv and not go_available() and not self.binary_path().exists():
            print(without_go)
            return 0
        try:
            print(self.ensure_built())
        except ProgramUnavailableError as why:
            print(f"error: {why}", file=sys.stderr)
            return 1
        return 0
