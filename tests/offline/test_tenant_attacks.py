"""Tenant files as the attacker: each file of `tests/tenant_attacks/` is one tenant file of an
example stack changed the way a team with write access to its own file only would try to reach
past its tenant. Each is rendered through the whole program (the key-level checks, then the
boundary proven on the rendered objects) and must be refused at the key it names, naming that
tenant file; with the grant it lists written in the platform's file, the same stack renders (an
attack without a grant has none: nothing the platform writes lets a tenant file do it).

An attack file: `stack`, `file` (the tenant file, relative to the stack's folder), `expect` (the
key path of the refusal in that file), `grant` (fields of `tenantPolicy.tenants.<tenant>`, or
absent) and `patch` (merged into the tenant file: mappings key by key, anything else replaced).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.errors import REDACTED, ConfigError
from config.stack_file.reader import read_stack
from offline.render import render_stack
from tests.conftest import PROJECT_DIR, write_stack

ATTACKS = PROJECT_DIR / "tests" / "tenant_attacks"
CASES = sorted(path.stem for path in ATTACKS.glob("*.yaml"))

PLATFORM: dict[str, dict[str, Any]] = {
    # Another team's token and registry login, which an attacker's file names.
    "aicloud-b": {
        "secrets": {"search-hf-token": REDACTED, "chat-hf-token": REDACTED, "search-registry-password": REDACTED},
        "registries": {
            "search-registry": {
                "server": "registry.search.example",
                "username": "robot",
                "passwordSecret": "search-registry-password",
            }
        },
    },
    # The sandbox team may use the L40S pool only; the search team holds 16 H100s at most.
    "aicloud-eks": {
        "tenantPolicy": {
            "tenants": {
                "sandbox": {"pools": ["l40s"]},
                "search": {"byType": {"h100": {"maxCapability": {"nvidia.com/gpu": 16}}}},
            }
        }
    },
}


def merged(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: merged(base.get(k), v) for k, v in patch.items()}}
    return copy.deepcopy(patch)


def _attack(name: str) -> dict[str, Any]:
    attack: dict[str, Any] = yaml.safe_load((ATTACKS / f"{name}.yaml").read_text())
    return attack


def _stack(tmp_path: Path, attack: dict[str, Any], granted: bool) -> Path:
    """The example's stack file and folder in `tmp_path`, the attacker's file changed, and the
    platform's setup (with the grant when `granted`)."""
    stack = attack["stack"]
    folder = tmp_path / ("granted" if granted else "refused")
    shutil.copytree(PROJECT_DIR / "clusters" / stack, folder / "clusters" / stack)
    tenant_file = folder / attack["file"]
    written = yaml.safe_load(tenant_file.read_text())
    tenant_file.write_text(yaml.safe_dump(merged(written, attack["patch"]), sort_keys=False))
    raw = merged(read_stack(PROJECT_DIR, stack).raw, PLATFORM.get(stack, {}))
    if granted:
        tenant = next(iter(written["tenants"]))
        raw = merged(raw, {"tenantPolicy": {"tenants": {tenant: attack["grant"]}}})
    return write_stack(folder / f"Pulumi.{stack}.yaml", raw)


def test_the_corpus_covers_the_boundary() -> None:
    assert len(CASES) >= 40
    attacks = [_attack(name) for name in CASES]
    assert {a["stack"] for a in attacks} == {"aicloud-b", "aicloud-eks"}
    assert sum("grant" in a for a in attacks) >= 25, "most attacks have a grant that allows them"


@pytest.mark.parametrize("name", CASES)
def test_a_tenant_files_attack_is_refused_naming_its_file(name: str, tmp_path: Path) -> None:
    attack = _attack(name)
    with pytest.raises(ConfigError) as refused:
        render_stack(PROJECT_DIR, attack["stack"], _stack(tmp_path, attack, granted=False))
    found = [(p.file, p.path) for p in refused.value.problems]
    assert (attack["file"], attack["expect"]) in found, refused.value
    if "grant" in attack:
        render_stack(PROJECT_DIR, attack["stack"], _stack(tmp_path, attack, granted=True))
