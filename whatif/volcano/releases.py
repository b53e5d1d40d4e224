"""Which Volcano release a cluster's scheduler runs, and the release an upgrade what-if compares it with.

The release is read where the cluster says it: the image tag of the Deployment whose container runs
`volcanosh/vc-scheduler` (from any registry), as the chart writes it
(`<basic.image_registry>/volcanosh/vc-scheduler:<basic.image_tag_version>`). A cluster whose
scheduler runs by digest or under another tag, or a dump without Deployments, names its release in
the argument instead (`volcano=<running>..<target>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config.upstream.volcano import VOLCANO_SCHEDULER_IMAGE
from live.cluster_state import DUMP_COMMAND, ClusterState
from whatif.volcano.build import RELEASES

COMPONENT = "volcano"
"""The one component `--upgrade` answers for: its scheduling code is what places the stack's work."""


class UpgradeError(Exception):
    """An `--upgrade` the what-if cannot answer; the message names the value and the fix."""


@dataclass(frozen=True)
class Upgrade:
    running: str
    """The release the cluster's scheduler runs now."""
    target: str
    """The release it would run after the upgrade (or downgrade)."""
    read_from: str
    """Where `running` was read: the image and its Deployment, or the argument."""


def parse_upgrade(text: str, state: ClusterState) -> Upgrade:
    """`volcano=<target>` (the running release read from the cluster) or `volcano=<running>..<target>`."""
    component, equals, versions = text.partition("=")
    if not equals or component.strip() != COMPONENT or not versions.strip():
        raise UpgradeError(
            f"--upgrade {text!r}: say which release to compare with, as `volcano=<release>` "
            f"(one of {', '.join(RELEASES)})"
        )
    running_text, dots, target_text = versions.strip().rpartition("..")
    target = _known(target_text, text)
    if dots:
        return Upgrade(_known(running_text, text), target, "the --upgrade argument")
    running, where = running_release(state)
    if running not in RELEASES:
        raise UpgradeError(
            f"--upgrade {text!r}: the cluster's scheduler runs {running} ({where}), and the what-if has the "
            f"scheduling code of {', '.join(RELEASES)} only; name the release closest to it: "
            f"`volcano=<release>..{target}`"
        )
    return Upgrade(running, target, where)


def _known(version: str, text: str) -> str:
    release = version.strip()
    if not release:
        raise UpgradeError(f"--upgrade {text!r}: name both releases, as `volcano=<running>..<target>`")
    release = release if release.startswith("v") else f"v{release}"
    if release not in RELEASES:
        raise UpgradeError(
            f"--upgrade {text!r}: no build of Volcano {release}'s scheduling code; the what-if has "
            f"{', '.join(RELEASES)} (the releases the Go module proxy serves)"
        )
    return release


def running_release(state: ClusterState) -> tuple[str, str]:
    """The tag of the cluster's `vc-scheduler` image and where it was read; an `UpgradeError` when
    the cluster (or dump) shows no scheduler image with a tag, or two different ones."""
    found = sorted({(tag, where) for deployment in state.deployments for tag, where in _scheduler_images(deployment)})
    tags = sorted({tag for tag, _ in found})
    if len(tags) == 1:
        return tags[0], found[0][1]
    if not found:
        seen = "the dump holds no Deployments" if "Deployment" not in state.listed else "no Deployment runs it"
        raise UpgradeError(
            f"--upgrade: cannot tell which Volcano release the cluster runs: {seen} with a tagged "
            f"`{VOLCANO_SCHEDULER_IMAGE}` image; dump with `{DUMP_COMMAND}`, or name it: "
            f"`--upgrade volcano=<running>..<target>`"
        )
    listed = "; ".join(f"{tag} ({where})" for tag, where in found)
    raise UpgradeError(
        f"--upgrade: the cluster runs more than one Volcano scheduler: {listed}; name the one to compare: "
        f"`--upgrade volcano=<running>..<target>`"
    )


def _scheduler_images(deployment: dict[str, Any]) -> list[tuple[str, str]]:
    metadata = deployment.get("metadata") or {}
    name = f"{metadata.get('namespace', 'default')}/{metadata.get('name', '?')}"
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    out = []
    for container in spec.get("containers") or []:
        image = str(container.get("image") or "")
        path, tag = _split_image(image)
        if path.endswith(VOLCANO_SCHEDULER_IMAGE) and tag:
            out.append((tag, f"image {image} of Deployment {name}"))
    return out


def _split_image(image: str) -> tuple[str, str]:
    """`registry/path:tag@digest` -> (`registry/path`, `tag`); the tag is empty when there is none."""
    named = image.split("@", 1)[0]
    slash = named.rfind("/")
    colon = named.rfind(":")
    if colon > slash:
        return named[:colon], named[colon + 1 :]
    return named, ""
