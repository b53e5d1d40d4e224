"""The README and docs stay true: counts, commands and links match the project."""

from __future__ import annotations

import argparse
import re

from cli.main import build_parser
from live.cluster_state import DUMP_COMMAND
from policy.pack import POLICIES
from tests.conftest import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text()


def test_readme_counts_match_the_project() -> None:
    corpus = len(list((PROJECT_DIR / "tests" / "bad_configs").glob("*.yaml")))
    assert f"holds **{corpus}** invalid stack files" in README
    risky = len(list((PROJECT_DIR / "tests" / "risky_configs").glob("*.yaml")))
    assert f"holds **{risky}** valid but dangerous stack files" in README
    assert f"(`policy/`, **{len(POLICIES)}** rules)" in README
    attacks = len(list((PROJECT_DIR / "tests" / "tenant_attacks").glob("*.yaml")))
    assert f"`tests/tenant_attacks/` holds **{attacks}** attacks" in README


def test_readme_commands_are_makefile_targets() -> None:
    makefile = (PROJECT_DIR / "Makefile").read_text()
    for target in re.findall(r"^make ([\w-]+)", README, flags=re.MULTILINE):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), f"`make {target}` is not a target"
    assert "```sh\nmake render\n```" in README and "```sh\nmake test\n```" in README


def test_the_readme_command_list_names_every_subcommand() -> None:
    listed = set(re.findall(r"^\.venv/bin/volcano-platform ([\w-]+)", README, flags=re.MULTILINE))
    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(sub.choices)
    assert commands <= listed, f"missing from the README's command list: {sorted(commands - listed)}"


def test_every_full_dump_command_in_the_docs_is_the_one_the_tools_print() -> None:
    """The docs give one dump of the cluster (`DUMP_COMMAND`, which `--help` prints), not three."""
    text = "\n".join(p.read_text() for p in [PROJECT_DIR / "README.md", *(PROJECT_DIR / "docs").glob("*.md")])
    commands = [
        " ".join(found.replace("\\\n", " ").split())
        for found in re.findall(r"kubectl get [^`]*?> cluster\.json", text, flags=re.DOTALL)
    ]
    full = [c for c in commands if "queues.scheduling.volcano.sh" in c]
    assert len(full) >= 3, commands
    assert all(c.replace(", ", ",") == DUMP_COMMAND for c in full), full


def test_relative_links_resolve() -> None:
    for doc in [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
    for path in re.findall(r"`((?:docs|schema|bench)/[\w./-]+)`", README):
        assert (PROJECT_DIR / path).exists(), f"README names missing {path}"
