"""Encrypted values only where the program takes a secret, credentials never in plain text anywhere
the stack renders text, and never echoed back in a message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from config.errors import ConfigError, Problem, join_path
from config.stack_file.reader import read_stack
from tests.conftest import PROJECT_DIR, load, mutate, problems_of, stack_raw, write_stack

DEV = stack_raw("dev")
SEED = stack_raw("aicloud-a")
MODEL = "qwen3-0-6b"


def _stack_file(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_encrypted_values_are_taken_only_in_secrets_and_the_kubeconfig(tmp_path: Path) -> None:
    data = yaml.safe_load(write_stack(tmp_path / "Pulumi.base.yaml", DEV).read_text())
    data["encryptionsalt"] = "v1:dGVzdA==:v1:jkDab+RjkhW3UlXB:B/E0OVE3jqn2wXpE/g5T6Np3EfM1eClb4JEV7ycsA25h54wUMkL/07s="
    ciphertext = {"secure": "v1:jkDab+RjkhW3UlXB:B/E0OVE3jqn2wXpE/g5T6Np3EfM1eClb4JEV7ycsA25h54wUMkL/07s="}
    data["config"]["volcano-platform:secrets"] = {"hf-token": ciphertext}
    data["config"]["volcano-platform:cluster"]["kubeconfig"] = ciphertext
    stack = read_stack(PROJECT_DIR, "s", _stack_file(tmp_path, data))
    assert stack.secret_keys == {"volcano-platform:secrets", "volcano-platform:cluster"}
    data["config"]["volcano-platform:models"][MODEL]["servedModelName"] = ciphertext
    with pytest.raises(ConfigError) as caught:
        read_stack(PROJECT_DIR, "s", _stack_file(tmp_path, data))
    assert [p.path for p in caught.value.problems] == [f"models.{MODEL}.servedModelName"]


def test_under_the_engine_an_encrypted_top_level_key_that_takes_none_is_refused() -> None:
    # The engine marks top-level keys secret; `models` never takes an encrypted value.
    paths = [p.path for p in problems_of_encrypted(DEV, ["models"])]
    assert paths == ["models"]
    assert [p.path for p in problems_of_encrypted(DEV, ["cluster"])] == ["cluster"], "no kubeconfig set"
    with_kubeconfig = mutate(DEV, lambda r: r["cluster"].update(kubeconfig="/etc/kube/config"))
    assert load(with_kubeconfig, encrypted=["cluster", "secrets"])


def problems_of_encrypted(raw: dict[str, Any], encrypted: list[str]) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        load(raw, encrypted=encrypted)
    return list(caught.value.problems)


def test_pulumi_cloud_ciphertexts_need_no_salt_but_passphrase_ones_do(tmp_path: Path) -> None:
    data = yaml.safe_load(write_stack(tmp_path / "Pulumi.base.yaml", DEV).read_text())
    data.pop("encryptionsalt", None)
    data["config"]["volcano-platform:secrets"] = {"hf-token": {"secure": "AAABAJ4zZW5jcnlwdGVkLWJ5LXNlcnZpY2U="}}
    assert read_stack(PROJECT_DIR, "s", _stack_file(tmp_path, data)).secret_keys == {"volcano-platform:secrets"}


def test_a_credential_is_never_echoed_back() -> None:
    token = "ghp_" + "a" * 36
    # A free-text key: the credential scan names it without the value.
    problems = problems_of(mutate(DEV, lambda r: r["cluster"].update(name=token)))
    assert "cluster.name" in [p.path for p in problems] and token not in "\n".join(map(str, problems))
    # A key whose value is checked for its form: the error shows what kind of value it was, not the value.
    problems = problems_of(mutate(DEV, lambda r: r["models"][MODEL].update(priorityClass=token)))
    text = "\n".join(str(p) for p in problems)
    assert f"models.{MODEL}.priorityClass" in [p.path for p in problems]
    assert token not in text and "[hidden: a GitHub token]" in text


def test_keys_and_values_cannot_break_out_of_a_line_or_a_code_span() -> None:
    key = "a\n```\n@team please merge"
    assert join_path("models", key) == 'models["a\\n\\u0060\\u0060\\u0060\\n@team please merge"]'
    line = str(Problem(join_path("models", key), "bad `name`", "rename it", got="x\n```"))
    assert "\n" not in line and line.count("`") == 2


def test_credentials_are_found_wherever_the_stack_renders_text() -> None:
    def plant(raw: dict[str, Any]) -> None:
        model = raw["models"]["qwen8b-preemptor"]
        model["labels"] = {**model.get("labels", {}), "ci": "AKIAABCDEFGHIJKLMNOP"}
        model["engine"]["extraArgs"] = ["--api-key", "plain-key"]

    paths = [p.path for p in problems_of(mutate(SEED, plant))]
    assert "models.qwen8b-preemptor.labels.ci" in paths
    assert "models.qwen8b-preemptor.engine.extraArgs[0]" in paths
    # `--hf-token` alone (use the token from the environment) is fine.
    ok = mutate(SEED, lambda r: r["models"]["qwen8b-preemptor"]["engine"].update(extraArgs=["--hf-token"]))
    assert not [w for w in load(ok).warnings if "extraArgs" in w.path]
