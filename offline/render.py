"""`render`: run a stack offline and write its manifests, Helm values, summary and picture.

Layout of a render directory:
  manifests/<Kind>[.<namespace>].<name>.yaml   one Kubernetes object each (patches: <Kind>Patch)
  helm/<release>.yaml                           chart, repository, version, namespace, values
  resources.yaml                                every registered resource: URN, file, options
  summary.md, summary.json, topology.svg
  images.txt                                    every container image the stack pulls, one per line
  .volcano-platform-render                      marks the folder as a render (the next one replaces it)
  STALE.md                                      only when the last render of the stack failed
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.kubernetes.yaml_text import dump
from config.errors import ConfigError
from config.spec.images import stack_images
from config.spec.platform import PlatformSpec
from config.stack_file.reader import StackFile, read_stack
from offline.engine import ProgramError, RunResult, run_program
from offline.manifests import Rendered, from_registrations
from offline.render_folder import write_folder
from offline.summary import render_summary
from offline.summary_data import write_summary_data
from offline.svg import render_svg


@dataclass
class StackRender:
    project_dir: Path
    stack: StackFile
    spec: PlatformSpec
    rendered: Rendered
    run: RunResult


def deep_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: deep_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [deep_sorted(v) for v in value]
    return value


def manifest_text(manifest: dict[str, Any]) -> str:
    """Top-level keys in Kubernetes order, nested keys sorted, multi-line strings as blocks."""
    return dump({key: deep_sorted(value) for key, value in manifest.items()})


def render_stack(project_dir: Path, stack: str, config_file: Path | None = None) -> StackRender:
    """Load and run one stack; raises ConfigError, StackFileError or ProgramError."""
    stack_file = read_stack(project_dir, stack, config_file)
    run = run_program(project_dir, stack_file)
    if run.config_error is not None or stack_file.problems:
        found = run.config_error.problems if run.config_error is not None else ()
        raise ConfigError([*found, *(p for p in stack_file.problems if p not in found)])
    if run.duplicates:
        raise ProgramError("resources registered twice (the real engine would refuse): " + ", ".join(run.duplicates))
    if run.spec is None:
        raise ProgramError("__main__.py did not leave a `spec` (PlatformSpec) behind")
    return StackRender(project_dir, stack_file, run.spec, from_registrations(run.registrations, run.outputs), run)


def write_render(result: StackRender, out: Path) -> None:
    """Write the render into `out`, replacing an earlier render there as a whole
    (`offline.render_folder`)."""
    write_folder(out, lambda folder: _write_files(result, folder))


def _write_files(result: StackRender, out: Path) -> None:
    rendered = result.rendered
    files = [obj.file for obj in rendered.objects] + [release.file for release in rendered.releases]
    for folder in {Path(file).parent for file in files}:
        (out / folder).mkdir(parents=True, exist_ok=True)  # once per folder, not per file
    for obj in rendered.objects:
        (out / obj.file).write_text(manifest_text(obj.manifest))
    for release in rendered.releases:
        (out / release.file).write_text(
            dump({k: deep_sorted(v) if k == "values" else v for k, v in release.data.items()})
        )
    (out / "resources.yaml").write_text(
        yaml.dump(rendered.index, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, width=120)
    )
    (out / "summary.md").write_text(render_summary(result.spec, rendered))
    write_summary_data(result.spec, out)
    (out / "topology.svg").write_text(render_svg(result.spec))
    (out / "images.txt").write_text("".join(f"{image}\n" for image in stack_images(result.spec)))
