"""Charts from a private registry are pulled with its credentials; the password is a Pulumi secret
from the config to the Release's inputs and never reaches a render, a summary or a diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from config.stack_file.reader import read_stack
from offline.engine import run_program
from offline.manifests import from_registrations
from offline.render import write_render
from tests.conftest import PROJECT_DIR, load, mutate, paths_of, stack_raw

SEED = stack_raw("aicloud-a")
PASSWORD = "Harbor-robot-password-7d1f"


def _as_the_cli_hands_it_over() -> Any:
    """The example stack with its secrets decrypted, as the CLI gives them to the program."""
    stack = read_stack(PROJECT_DIR, "aicloud-a")
    secrets = json.loads(stack.pulumi_config["volcano-platform:secrets"])
    secrets["mars-registry-password"] = PASSWORD
    stack.pulumi_config["volcano-platform:secrets"] = json.dumps(secrets)
    return stack


def test_the_mirrors_charts_are_pulled_with_its_credentials_and_the_password_stays_secret(tmp_path: Path) -> None:
    stack = _as_the_cli_hands_it_over()
    run = run_program(PROJECT_DIR, stack)
    assert run.config_error is None and run.spec is not None
    rendered = from_registrations(run.registrations, run.outputs)
    for release in rendered.releases:
        assert release.data["login"] == {"username": "robot$aicloud-a", "password": "[secret]"}, release.file
    from offline.render import StackRender

    write_render(StackRender(PROJECT_DIR, stack, run.spec, rendered, run), tmp_path / "out")
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert PASSWORD not in path.read_text(), path


def test_other_registries_take_their_own_credentials_and_a_ca_bundle() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["registries"]["charts-registry"] = {
            "server": "charts.example.com",
            "username": "ci",
            "passwordSecret": "charts",
        }
        raw["secrets"]["charts"] = "[secret]"
        raw["volcano"].update(repository="oci://charts.example.com/platform", chartCaFile="/etc/ssl/charts-ca.pem")

    spec = load(mutate(SEED, change), encrypted=["secrets"])
    from config.spec.images import lws_chart, volcano_chart

    volcano = volcano_chart(spec.config)
    assert (volcano.credentials, volcano.ca_file) == ("charts-registry", "/etc/ssl/charts-ca.pem")
    assert lws_chart(spec.config).credentials == "mars-registry", "the mirror's charts keep the mirror's login"


def test_chart_credentials_must_name_a_registry() -> None:
    raw = mutate(SEED, lambda r: r["cluster"]["mirror"].update(chartCredentials="nope"))
    assert "cluster.mirror.chartCredentials" in paths_of(raw)
