"""The program registers the Kubernetes provider's types without pulumi-kubernetes' generated
classes; the engine must receive exactly what those classes would send."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
from google.protobuf.json_format import MessageToDict
from pulumi.runtime import rpc

from bench import floor
from components.kubernetes import resource as kubernetes_types
from components.kubernetes.resource import KubernetesResource, KubernetesType, custom_kind
from config.stack_file.reader import read_stack
from offline import engine
from offline.engine import Registration
from offline.render import StackRender, render_stack
from offline.schemas import crd_names, default_schema_dirs, is_custom
from tests.conftest import PROJECT_DIR, STACKS, stack_raw, write_stack

KUBERNETES_TYPES = {t.token: t for t in vars(kubernetes_types).values() if isinstance(t, KubernetesType)}


@functools.cache
def _volcano_installed_elsewhere() -> StackRender:
    """The dev stack with `volcano.install: false`: the scheduler policy as a ConfigMap patch."""
    with tempfile.TemporaryDirectory() as folder:
        path = write_stack(Path(folder) / "Pulumi.dev.yaml", {**stack_raw("dev"), "volcano": {"install": False}})
        return render_stack(PROJECT_DIR, "dev", path)


def _program_registrations(committed_render: Callable[[str], StackRender]) -> dict[str, Registration]:
    """One registration of each Kubernetes type the committed stacks (and the dev stack with
    Volcano installed elsewhere) register: the one with the most inputs (a PriorityClass with a
    description, the Release that waits for jobs)."""
    found: dict[str, Registration] = {}
    renders = [committed_render(stack) for stack in STACKS] + [_volcano_installed_elsewhere()]
    for render in renders:
        for reg in render.run.registrations:
            if not reg.custom or not reg.type.startswith("kubernetes:"):
                continue  # components and the provider
            if reg.type not in found or len(reg.inputs) > len(found[reg.type].inputs):
                found[reg.type] = reg
    return found


def _secret_values(inputs: dict[str, Any], kubernetes_type: KubernetesType) -> dict[str, Any]:
    """The program passes each secret entry as a secret; the recorded inputs hold placeholders.
    Called inside the run: an output belongs to the event loop it was made on."""
    out = dict(inputs)
    for key in kubernetes_type.secret_inputs:
        if key in out:
            out[key] = {k: pulumi.Output.secret(v) for k, v in out[key].items()}
    return out


def _requests(monkeypatch: pytest.MonkeyPatch, register: Callable[[pulumi.ResourceOptions], None]) -> dict[str, Any]:
    """Every registration request of one run, by resource name, as the engine receives it (the
    caller's source position and stack trace aside: they differ by construction)."""
    captured: dict[str, Any] = {}

    class RawMonitor(engine._RecordingMonitor):
        def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
            message = MessageToDict(request)
            message.pop("sourcePosition", None)
            message.pop("stackTrace", None)
            captured[request.name] = message
            return super().RegisterResource(request)

    monkeypatch.setattr(engine, "_RecordingMonitor", RawMonitor)

    def body() -> dict[str, Any]:
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        dependency = pulumi.ComponentResource("test:index:Dependency", "dependency")
        register(
            pulumi.ResourceOptions(
                parent=parent,
                depends_on=[dependency],
                aliases=[pulumi.Alias(name="earlier-name")],
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create="20m"),
            )
        )
        return {}

    result = engine.run_callable(read_stack(PROJECT_DIR, "dev"), body)
    assert result.config_error is None
    return captured


def _same_request(monkeypatch: pytest.MonkeyPatch, kubernetes_type: KubernetesType, reg: Registration) -> None:
    """`reg` registered through `KubernetesResource` and through pulumi-kubernetes' own class (the
    benchmark floor's replay) reaches the engine as the same request."""

    def register_ours(opts: pulumi.ResourceOptions) -> None:
        KubernetesResource("object", kubernetes_type, _secret_values(reg.inputs, kubernetes_type), opts)

    def register_theirs(opts: pulumi.ResourceOptions) -> None:
        inputs = _secret_values(reg.inputs, kubernetes_type)
        floor.register_generated(dataclasses.replace(reg, name="object", inputs=inputs), opts)

    ours = _requests(monkeypatch, register_ours)["object"]
    theirs = _requests(monkeypatch, register_theirs)["object"]
    assert ours == theirs
    assert ours["type"] == kubernetes_type.token


def test_every_built_in_type_is_one_the_program_registers(committed_render: Callable[[str], StackRender]) -> None:
    registered = _program_registrations(committed_render)
    assert set(KUBERNETES_TYPES) <= set(registered)
    # Kubernetes' own groups have no dot (`apps`) or end in `.k8s.io`; everything else is a CRD's,
    # and so are the vendored CRDs' groups that end in `.k8s.io` too (`gateway.networking.k8s.io`).
    groups = {token.split(":")[1].split("/")[0] for token in registered if token not in KUBERNETES_TYPES}
    crd_groups = {group for group, _ in crd_names(d for d in default_schema_dirs().values() if d is not None)}
    assert all(is_custom(f"{group}/v1", crd_groups) for group in groups), groups


@pytest.mark.parametrize("token", sorted(KUBERNETES_TYPES))
def test_registration_is_what_the_generated_class_sends(
    token: str, monkeypatch: pytest.MonkeyPatch, committed_render: Callable[[str], StackRender]
) -> None:
    _same_request(monkeypatch, KUBERNETES_TYPES[token], _program_registrations(committed_render)[token])


def test_custom_objects_are_registered_as_custom_resource_registers_them(
    monkeypatch: pytest.MonkeyPatch, committed_render: Callable[[str], StackRender]
) -> None:
    """Volcano, LWS, monitoring and KEDA objects, and the patch of the default queue."""
    registered = _program_registrations(committed_render)
    custom = sorted(token for token in registered if token not in KUBERNETES_TYPES)
    assert len(custom) >= 9 and any(token.endswith("Patch") for token in custom)
    for token in custom:
        inputs = registered[token].inputs
        kind = custom_kind(inputs["apiVersion"], inputs["kind"], patch=token.endswith("Patch"))
        assert set(inputs) == {"apiVersion", "kind", "metadata", "spec"}, token  # all the generated class sends
        _same_request(monkeypatch, kind, registered[token])


def test_a_secret_stays_secret_in_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = {"metadata": {"name": "s"}, "stringData": {"token": "plain"}}
    request = _requests(monkeypatch, lambda opts: KubernetesResource("s", kubernetes_types.SECRET, inputs, opts))["s"]
    assert request["additionalSecretOutputs"] == ["data", "stringData"]
    assert request["object"]["stringData"][rpc._special_sig_key] == rpc._special_secret_sig


def test_a_manifest_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kind is 'Namespace', not 'Service'"):
        KubernetesResource("x", kubernetes_types.NAMESPACE, {"kind": "Service"})


@pytest.mark.slow
def test_a_render_imports_no_generated_class() -> None:
    """Importing one API group's generated classes costs more than registering an example
    cluster; a render must not pull any in."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from offline.render import render_stack\n"
        f"render_stack(Path({str(PROJECT_DIR)!r}), 'aicloud-b')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pulumi_kubernetes.'))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_DIR, check=True, capture_output=True, text=True
    ).stdout
    # `pulumi_kubernetes.<group>` alone is a lazy stub; its modules hold the generated code.
    groups = {m.split(".")[1] for m in json.loads(loaded) if m.count(".") >= 2}
    assert groups == set()


def test_the_private_piece_of_pulumi_kubernetes_it_relies_on_is_still_there() -> None:
    """`KubernetesResource` takes the provider version every generated class puts in its options
    from `pulumi_kubernetes._utilities.get_resource_opts_defaults`, a private function. If a release
    moves or renames it, this fails first, naming it (instead of every render failing)."""
    import importlib

    utilities = importlib.import_module("pulumi_kubernetes._utilities")
    defaults = getattr(utilities, "get_resource_opts_defaults", None)
    assert callable(defaults), (
        "pulumi_kubernetes._utilities.get_resource_opts_defaults moved: see components/kubernetes/resource.py"
    )
    options = defaults()
    assert isinstance(options, pulumi.ResourceOptions) and options.version, "it must give the provider's version"
