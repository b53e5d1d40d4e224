"""The upstream versions a stack pins must be ones whose schemas the project ships.

Every Volcano and LeaderWorkerSet object is validated against the CRDs of the chart version that
installs them; a version without vendored schemas could not be checked at all, so it is refused
with the command that vendors it.
"""

from __future__ import annotations

from config.errors import Problem
from config.spec import PlatformSpec
from config.vendored import LWS, VOLCANO, fetch_command, vendored_dir, vendored_versions


def _unvendored(project: str, label: str, path: str, version: str) -> Problem:
    have = ", ".join(vendored_versions(project)) or "none"
    return Problem(
        path,
        f"no {label} schemas of chart version {version} are vendored in upstream/ (vendored: {have}), "
        "so its objects cannot be checked",
        f"use a vendored version, or vendor this one with `{fetch_command(project, version)}` (needs network; "
        "review and commit upstream/)",
        got=version,
    )


def check_upstream_versions(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    volcano = spec.config.volcano.version
    if vendored_dir(VOLCANO, volcano) is None:
        problems.append(_unvendored(VOLCANO, "Volcano", "volcano.version", volcano))
    lws = spec.config.lws.version
    uses_lws = spec.lws_install or any(m.multi_node for m in spec.models.values())
    if uses_lws and vendored_dir(LWS, lws) is None:
        problems.append(_unvendored(LWS, "LeaderWorkerSet", "lws.version", lws))
    return problems
