"""Cloud interconnects: a pod that requests EFA devices gets what AWS documents it needs besides the
devices (the libfabric provider, GPUDirect RDMA, 2 MiB huge pages), and a model's own settings win."""

from __future__ import annotations

from components.inference.pod_template import pod_template
from tests.conftest import load, stack_raw

EFA = "vpc.amazonaws.com/efa"


def _pod(change: dict[str, object] | None = None) -> dict[str, object]:
    raw = stack_raw("aicloud-eks")
    raw["models"]["llama-405b"].update(change or {})
    spec = load(raw, "aicloud-eks")
    return pod_template(spec.models["llama-405b"], "leader")["spec"]  # type: ignore[return-value]


def test_an_efa_pod_gets_the_provider_rdma_and_huge_pages() -> None:
    container = _pod()["containers"][0]  # type: ignore[index]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert container["resources"]["requests"]["hugepages-2Mi"] == "5120Mi"
    assert container["resources"]["limits"] == container["resources"]["requests"]
    assert container["resources"]["requests"][EFA] == "32"


def test_the_models_own_environment_wins() -> None:
    container = _pod({"env": {"FI_EFA_USE_DEVICE_RDMA": "0"}})["containers"][0]  # type: ignore[index]
    values = [e.get("value") for e in container["env"] if e["name"] == "FI_EFA_USE_DEVICE_RDMA"]
    assert values == ["0"]


def test_a_pod_without_efa_gets_none_of_it() -> None:
    raw = stack_raw("aicloud-eks")
    spec = load(raw, "aicloud-eks")
    container = pod_template(spec.models["qwen3-32b"], "server")["spec"]["containers"][0]
    assert not any(e["name"].startswith("FI_") for e in container.get("env", []))
    assert "hugepages-2Mi" not in container["resources"]["requests"]
