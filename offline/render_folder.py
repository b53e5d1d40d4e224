"""Render folders: written whole or not at all, and read back only when they are what a render
writes.

Writing: a render goes into a new folder beside the target and is moved into place when complete,
so a failed render never leaves half a folder. A folder is replaced only when a render wrote it (it
holds the marker file, listing what it wrote) and holds nothing else, so `--out ~/work` cannot
delete files someone else put there, nor a note added to a render folder; a symbolic link is never
followed out of it. When a render fails, the previous render stays and is
marked stale, so nobody reviews it as current.

Reading (`diff`): the index must list well-formed entries whose files exist inside the folder, every
manifest must be a YAML mapping and appear in the index, and `summary.json` must be the mapping a
render writes. A damaged folder is an input error naming the file and entry, never a silent skip.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from config.errors import describe_value, one_line
from config.stack_file.yaml12 import load_yaml_text

MARKER = ".volcano-platform-render"
"""Written into every render folder, listing the files the render wrote; a folder without it, or
with files it does not list, is never replaced."""
MARKER_HEADER = "# written by volcano-platform render; the next render replaces these files, and only these:"
STALE = "STALE.md"
INDEX = "resources.yaml"
MANIFESTS = "manifests"


class RenderFolderError(Exception):
    """The folder cannot be written or read as a render; the message says why and what to do."""


def _is_ours(folder: Path) -> bool:
    return (folder / MARKER).is_file() and not (folder / MARKER).is_symlink()


def _files(folder: Path) -> set[str]:
    """Every file and link below `folder`, by its path relative to it (links are not followed)."""
    return {
        str((Path(root) / name).relative_to(folder))
        for root, folders, names in os.walk(folder)
        for name in [*names, *(f for f in folders if (Path(root) / f).is_symlink())]
    }


def _written(folder: Path) -> set[str] | None:
    """The files the render that wrote `folder` listed in its marker (None: an older marker
    without the list)."""
    try:
        lines = (folder / MARKER).read_text(errors="replace").splitlines()
    except OSError as error:
        raise RenderFolderError(f"cannot read {folder / MARKER}: {error.strerror}; fix its permissions") from None
    if not lines or lines[0] != MARKER_HEADER:
        return None
    return set(lines[1:])


def _refuse_foreign(out: Path) -> None:
    if out.is_symlink():
        raise RenderFolderError(f"{out} is a symbolic link; give the folder itself as --out")
    if out.exists() and not out.is_dir():
        raise RenderFolderError(f"{out} exists and is not a folder; choose another --out")
    if out.is_dir() and any(out.iterdir()) and not _is_ours(out):
        raise RenderFolderError(
            f"{out} holds files that volcano-platform did not write (no {MARKER}); choose a new or empty folder "
            "for --out, so that nothing in it is replaced"
        )
    written = _written(out) if out.is_dir() and _is_ours(out) else None
    added = sorted(_files(out) - written - {MARKER, STALE}) if written is not None else []
    if added:
        shown = ", ".join(one_line(name) for name in added[:5]) + (
            f" and {len(added) - 5} more" if len(added) > 5 else ""
        )
        raise RenderFolderError(
            f"{out} holds files an earlier render did not write ({shown}); a render replaces the whole folder, so "
            "move them out first, or choose another --out"
        )


def write_folder(out: Path, write: Callable[[Path], None]) -> None:
    """Run `write` into a new folder, then move it into place of `out` (replacing an earlier render)."""
    _refuse_foreign(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        write(staging)
        listed = "".join(f"{name}\n" for name in sorted(_files(staging)))
        (staging / MARKER).write_text(f"{MARKER_HEADER}\n{listed}")
        retired = None
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, retired / out.name)
        os.replace(staging, out)
        if retired is not None:
            shutil.rmtree(retired)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def mark_stale(out: Path, reason: str) -> None:
    """Say in a render folder that its stack no longer renders (only in a folder a render wrote)."""
    if out.is_dir() and not out.is_symlink() and _is_ours(out):
        (out / STALE).write_text(
            "# This render is stale\n\nThe last `volcano-platform render` of this stack failed, so these files "
            f"describe an earlier version of it:\n\n    {one_line(reason)[:2000]}\n"
        )


def _inside(folder: Path, relative: str, what: str) -> Path:
    """`folder/relative`, refused when it leaves the folder (`..`, an absolute path, a link out)."""
    root = folder.resolve()
    path = (folder / relative).resolve()
    if Path(relative).is_absolute() or not path.is_relative_to(root):
        raise RenderFolderError(f"{folder}: {what} `{one_line(relative)}` points outside the render folder")
    return path


def read_index(folder: Path) -> list[dict[str, Any]]:
    """The entries of `resources.yaml`: each a mapping with a string `urn` and `type`, and a
    `file` inside the folder when it has one. An empty folder is an empty render."""
    index = folder / INDEX
    if not index.is_file():
        if folder.is_dir() and not any(folder.iterdir()):
            return []
        raise RenderFolderError(
            f"{folder} is not a render folder (no {INDEX}); write one with `volcano-platform render`"
        )
    try:
        items = load_yaml_text(_inside(folder, INDEX, "the index").read_text())
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
        raise RenderFolderError(f"{index}: not the YAML a render writes ({one_line(str(error))[:200]})") from None
    if items is None:
        return []
    if not isinstance(items, list):
        raise RenderFolderError(f"{index}: must be a list of resources (got {describe_value(items)})")
    seen: set[str] = set()
    for position, item in enumerate(items):
        where = f"{index}: entry {position}"
        if not isinstance(item, dict):
            raise RenderFolderError(f"{where} is not a mapping (got {describe_value(item)})")
        for key in ("urn", "type"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise RenderFolderError(f"{where}: `{key}` must be a string (got {describe_value(item.get(key))})")
        if item["urn"] in seen:
            raise RenderFolderError(f"{where}: URN {describe_value(item['urn'])} is listed twice")
        seen.add(item["urn"])
        file = item.get("file")
        if file is not None:
            if not isinstance(file, str):
                raise RenderFolderError(f"{where}: `file` must be a string (got {describe_value(file)})")
            if not _inside(folder, file, "the file").is_file():
                raise RenderFolderError(f"{where}: its file {describe_value(file)} is missing")
        for key in ("inputs", "replaceOnChanges", "aliases"):
            if key in item and not isinstance(item[key], dict if key == "inputs" else list):
                raise RenderFolderError(f"{where}: `{key}` has the wrong type (got {describe_value(item[key])})")
    indexed = {item["file"] for item in items if item.get("file")}
    stray = (
        sorted(
            str(path.relative_to(folder))
            for path in (folder / MANIFESTS).rglob("*")
            if path.is_file() and str(path.relative_to(folder)) not in indexed
        )
        if (folder / MANIFESTS).is_dir()
        else []
    )
    if stray:
        shown = ", ".join(stray[:5]) + (f" and {len(stray) - 5} more" if len(stray) > 5 else "")
        raise RenderFolderError(
            f"{folder}: {len(stray)} manifest(s) are not in {INDEX} ({one_line(shown)}): the folder was edited after "
            "it was rendered; render it again"
        )
    return items


def read_manifest(folder: Path, file: str) -> str:
    """A manifest's text (inside the folder, UTF-8); `parse_manifest` checks its shape."""
    path = _inside(folder, file, "the file")
    try:
        return path.read_text()
    except (UnicodeDecodeError, OSError) as error:
        raise RenderFolderError(f"{folder / file}: not a manifest ({one_line(str(error))[:200]})") from None


def parse_manifest(text: str, where: str) -> dict[str, Any]:
    """The object in a manifest's text, refused unless it is one YAML mapping. Only manifests that
    differ between two renders are parsed: at 10,000 nodes parsing every one would cost seconds."""
    try:
        data = load_yaml_text(text)
    except (yaml.YAMLError, RecursionError) as error:
        raise RenderFolderError(f"{where}: not a manifest ({one_line(str(error))[:200]})") from None
    if not isinstance(data, dict):
        raise RenderFolderError(f"{where}: not a manifest (got {describe_value(data)})")
    return data


def read_json_mapping(path: Path, keys: dict[str, type]) -> dict[str, Any]:
    """A JSON file that must be a mapping whose `keys` have the given types."""
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise RenderFolderError(f"{path}: not the JSON a render writes ({one_line(str(error))[:200]})") from None
    if not isinstance(data, dict):
        raise RenderFolderError(f"{path}: must be a JSON object (got {describe_value(data)})")
    for key, kind in keys.items():
        if not isinstance(data.get(key), kind):
            raise RenderFolderError(
                f"{path}: `{key}` must be a JSON {kind.__name__} (got {describe_value(data.get(key))})"
            )
    return data
