"""Vendor an upstream project's schemas at a release tag: `python upstream/fetch.py volcano 1.16.0`.

Copies the files the project validates against (CRDs, chart values, Pulumi's project schema) and
the upstream LICENSE, byte for byte, into `upstream/<project>-<version>/`, and writes a SOURCE
file naming the repository, tag, commit and each file's git blob id, so anyone can check the copy
with `git hash-object`. Needs `git` and network access to the repository (or a local mirror given
with `--repository`). `make upstream VOLCANO=1.16.0` (or `LWS=...`, `PULUMI=...`) runs it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

UPSTREAM_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Project:
    repository: str
    files: dict[str, str]
    """Path in the vendored folder -> path in the upstream repository at the tag."""
    notes: tuple[str, ...] = field(default=())

    def tag(self, version: str) -> str:
        return f"v{version}"


_VOLCANO_CRDS = "installer/helm/chart/volcano/crd/bases/"
_OPERATOR_CRDS = "example/prometheus-operator-crd/"
PROJECTS: dict[str, Project] = {
    "volcano": Project(
        "https://github.com/volcano-sh/volcano",
        {
            "values.yaml": "installer/helm/chart/volcano/values.yaml",
            "crd/scheduling.volcano.sh_queues.yaml": _VOLCANO_CRDS + "scheduling.volcano.sh_queues.yaml",
            "crd/scheduling.volcano.sh_podgroups.yaml": _VOLCANO_CRDS + "scheduling.volcano.sh_podgroups.yaml",
            "crd/topology.volcano.sh_hypernodes.yaml": _VOLCANO_CRDS + "topology.volcano.sh_hypernodes.yaml",
            "LICENSE": "LICENSE",
        },
        ("The chart's CRDs are ordinary templates of the chart of the same version.",),
    ),
    "lws": Project(
        "https://github.com/kubernetes-sigs/lws",
        {
            "values.yaml": "charts/lws/values.yaml",
            "crd/leaderworkerset.x-k8s.io_leaderworkersets.yaml": (
                "charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
            ),
            "LICENSE": "LICENSE",
        },
        (
            "values.yaml is the git copy: its image tag is `main` with pullPolicy Always; the published chart",
            "(oci://registry.k8s.io/lws/charts/lws) is re-packaged with tag v<version> and IfNotPresent",
            "(hack/push-chart.sh). The keys are the same.",
        ),
    ),
    "prometheus-operator": Project(
        "https://github.com/prometheus-operator/prometheus-operator",
        {
            f"crd/monitoring.coreos.com_{kind}.yaml": f"{_OPERATOR_CRDS}monitoring.coreos.com_{kind}.yaml"
            for kind in ("podmonitors", "servicemonitors", "prometheusrules")
        }
        | {"LICENSE": "LICENSE", "NOTICE": "NOTICE"},
        (
            "The operator is not installed by the stack (kube-prometheus-stack brings it); these are the CRDs of",
            "the objects the stack renders when `observability.enabled`.",
        ),
    ),
    "keda": Project(
        "https://github.com/kedacore/keda",
        {"crd/keda.sh_scaledobjects.yaml": "config/crd/bases/keda.sh_scaledobjects.yaml", "LICENSE": "LICENSE"},
        ("KEDA is not installed by the stack; this is the CRD of the ScaledObjects it renders for `autoscaling`.",),
    ),
    "pulumi": Project(
        "https://github.com/pulumi/pulumi",
        {"project.json": "sdk/go/common/workspace/project.json", "LICENSE": "LICENSE"},
        ("JSON Schema of Pulumi.yaml project files. Pulumi publishes no schema of stack files.",),
    ),
}


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _resolve_tag(repository: str, tag: str, work: Path) -> tuple[Path, str]:
    """(git directory to read from, commit of `tag`). A local repository or mirror is read in
    place; a remote one is fetched shallowly into `work`."""
    local = Path(repository)
    if local.exists():
        git_dir = Path(_git("rev-parse", "--absolute-git-dir", cwd=local).strip())
    else:
        _git("init", "--quiet", cwd=work)
        _git("fetch", "--quiet", "--depth", "1", repository, f"refs/tags/{tag}", cwd=work)
        git_dir = work / ".git"
        tag = "FETCH_HEAD"
    return git_dir, _git(f"--git-dir={git_dir}", "rev-parse", f"{tag}^{{commit}}", cwd=work).strip()


def fetch(name: str, version: str, repository: str | None = None, into: Path = UPSTREAM_DIR) -> Path:
    """Copy `name`'s files at tag v<version> into `<into>/<name>-<version>/`; returns that folder."""
    project = PROJECTS[name]
    version = version.removeprefix("v")
    tag = project.tag(version)
    target = into / f"{name}-{version}"
    with tempfile.TemporaryDirectory(prefix="vp-upstream-") as tmp:
        work = Path(tmp)
        git_dir, commit = _resolve_tag(repository or project.repository, tag, work)
        read = f"--git-dir={git_dir}"
        date = _git(read, "log", "-1", "--format=%cs", commit, cwd=work).strip()
        lines = [
            f"Verbatim copies from {project.repository}, tag {tag} (commit {commit}, {date}).",
            "Written by upstream/fetch.py; check a file with `git hash-object <file>` against its blob id.",
            *project.notes,
            "",
        ]
        target.mkdir(parents=True, exist_ok=True)
        for dest, source in project.files.items():
            blob = _git(read, "rev-parse", f"{commit}:{source}", cwd=work).strip()
            content = subprocess.run(
                ["git", read, "cat-file", "blob", blob], cwd=work, check=True, capture_output=True
            ).stdout
            path = target / dest
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            lines.append(f"{dest}  <- {source}  (blob {blob})")
    (target / "SOURCE").write_text("\n".join(lines) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python upstream/fetch.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("project", choices=sorted(PROJECTS), help="upstream project to vendor")
    parser.add_argument("version", help="release version, e.g. 1.16.0 (the tag is v<version>)")
    parser.add_argument("--repository", help="fetch from this git URL or local mirror instead of GitHub")
    args = parser.parse_args(argv)
    try:
        target = fetch(args.project, args.version, args.repository)
    except subprocess.CalledProcessError as error:
        print(f"error: `{' '.join(error.cmd)}` failed: {error.stderr.strip()}", file=sys.stderr)
        return 1
    where = target.relative_to(UPSTREAM_DIR.parent)
    print(f"vendored {args.project} {args.version} into {where}; review and commit it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
