"""The preview identity's access (`volcano-platform preview-role`): exactly what refresh and the
preflight read, nothing else. Requests are judged the way Kubernetes' RBAC authorizer judges them
(`plugin/pkg/auth/authorizer/rbac/rbac.go`, `RuleAllows` in `pkg/apis/rbac/v1/evaluation_helpers.go`):
a ClusterRoleBinding's rules hold in every namespace and for cluster-scoped objects, a RoleBinding's
in its namespace only, and a rule allows a request when its verbs, API groups and resources
(`*` matching all) include the request's and, when it names resources, the request's object is
one of them (a LIST names none)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from cli.main import main
from live.access import AWAITER_LISTS, BUILTIN, Subject, preview_access, release_storage
from live.cluster_state import read_cluster
from offline.schemas import crd_names, schema_dirs
from tests.conftest import PROJECT_DIR, STACKS, mutate, stack_raw, write_stack
from tests.live.test_preflight import api_server  # noqa: F401 - the fixture

EXAMPLE = PROJECT_DIR / "docs" / "rbac" / "preview-reader.yaml"
FORBIDDEN_RESOURCES = {
    "nodes/proxy",
    "pods/exec",
    "pods/log",
    "pods/attach",
    "pods/portforward",
    "serviceaccounts/token",
}


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _rule_allows(rule: dict[str, Any], verb: str, group: str, resource: str, name: str | None) -> bool:
    def has(values: list[str], wanted: str) -> bool:
        return "*" in values or wanted in values

    named = "resourceNames" not in rule or (name is not None and name in rule["resourceNames"])
    return has(rule["verbs"], verb) and has(rule["apiGroups"], group) and has(rule["resources"], resource) and named


def allowed(
    documents: list[dict[str, Any]],
    verb: str,
    group: str,
    resource: str,
    namespace: str | None,
    name: str | None = None,
) -> bool:
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in documents if "rules" in d}
    for binding in documents:
        if binding["kind"] == "ClusterRoleBinding":
            role = roles.get(("ClusterRole", None, binding["roleRef"]["name"]))
        elif binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] == namespace:
            role = roles.get(("Role", namespace, binding["roleRef"]["name"]))
        else:
            continue
        if role and any(_rule_allows(rule, verb, group, resource, name) for rule in role["rules"]):
            return True
    return False


@pytest.fixture(scope="module", params=STACKS)
def stack_access(request: pytest.FixtureRequest) -> tuple[Any, list[dict[str, Any]]]:
    from offline.render import render_stack

    render = render_stack(PROJECT_DIR, request.param)
    return render, preview_access(render)


def test_the_role_grants_nothing_broad_no_subresource_and_no_write(stack_access: Any) -> None:
    _, documents = stack_access
    for document in documents:
        kubernetes_validate.validate(document, "1.30", strict=True)
        for rule in document.get("rules", []):
            assert "*" not in rule["verbs"] + rule["apiGroups"] + rule["resources"], rule
            assert set(rule["verbs"]) <= {"get", "list"}, rule
            assert not [r for r in rule["resources"] if "/" in r], rule
            assert not set(rule["resources"]) & FORBIDDEN_RESOURCES
    (cluster_role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    assert not [r for r in cluster_role["rules"] if "secrets" in r["resources"]], "Secrets only in namespaces"
    for elsewhere in ("default", "kube-system"):
        assert not allowed(documents, "get", "", "secrets", elsewhere)
        # The what-if lists pods everywhere (what runs where holds nodes), never their logs or exec.
        assert allowed(documents, "list", "", "pods", elsewhere)
        assert not allowed(documents, "get", "", "pods/log", elsewhere)
    assert not allowed(documents, "get", "", "nodes/proxy", None)


def test_the_role_covers_every_read_of_a_refresh(stack_access: Any) -> None:
    render, documents = stack_access
    # API resource names: Kubernetes' own, and the vendored CRDs' `spec.names.plural`.
    resources = {**BUILTIN, **crd_names(d for d in schema_dirs(render.spec).values() if d is not None)}
    for obj in render.rendered.objects:
        group = str(obj.manifest["apiVersion"]).rpartition("/")[0]
        plural, _ = resources[(group, obj.kind)]
        assert allowed(documents, "get", group, plural, obj.namespace, obj.name), (obj.kind, obj.namespace)
        for awaited_group, awaited in AWAITER_LISTS.get(obj.kind, []):
            assert allowed(documents, "list", awaited_group, awaited, obj.namespace), (obj.kind, awaited)
    for release in render.rendered.releases:
        storage = release_storage(render)
        assert allowed(documents, "list", "", storage, release.data["namespace"]), "Helm's release storage"


def test_no_secret_but_the_stacks_own_is_readable(stack_access: Any) -> None:
    """The example stacks keep Helm's records in ConfigMaps, so no namespace's Secrets can be listed
    and only the Secrets the stack manages can be read: not Volcano's admission TLS key, not a
    token or key someone else keeps beside them."""
    render, documents = stack_access
    assert release_storage(render) == "configmaps"
    own = {(obj.namespace, obj.name) for obj in render.rendered.objects if obj.kind == "Secret"}
    namespaces = {d["metadata"]["namespace"] for d in documents if d["kind"] == "Role"}
    for namespace in [*namespaces, "default", "kube-system"]:
        assert not allowed(documents, "list", "", "secrets", namespace), namespace
        for name in ("volcano-admission-secret", "lws-webhook-server-cert", "someone-elses-token"):
            assert not allowed(documents, "get", "", "secrets", namespace, name), (namespace, name)
    for namespace, name in own:
        assert allowed(documents, "get", "", "secrets", namespace, name)


def test_with_helms_default_storage_the_release_namespaces_secrets_are_listed(
    render_raw: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`helmReleaseStorage: secret` (or unset): refreshing a Release lists every Secret of its
    namespace, and the role says so rather than failing the refresh; nowhere else."""
    raw = mutate(stack_raw("aicloud-a"), lambda r: r["cluster"].pop("helmReleaseStorage"))
    render = render_raw(raw, "aicloud-a")
    documents = preview_access(render)
    releases = {str(release.data["namespace"]) for release in render.rendered.releases}
    assert releases == {"volcano-system", "lws-system"}
    for namespace in releases:
        assert allowed(documents, "list", "", "secrets", namespace)
    assert not allowed(documents, "list", "", "secrets", "a01")
    path = write_stack(tmp_path / "Pulumi.aicloud-a.yaml", raw)
    assert main(["preview-role", "--stack", "aicloud-a", "--config-file", str(path)]) == 0
    header = capsys.readouterr().out.split("\n---", 1)[0]
    assert "every Secret of the charts' namespaces" in header, header


def test_the_real_client_is_allowed_every_request_the_preflight_makes(
    api_server: Any,  # noqa: F811 - the fixture
    stack_access: Any,
) -> None:
    server, kubeconfig = api_server
    _, documents = stack_access
    read_cluster(str(kubeconfig), "fixture")
    pattern = re.compile(r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[^/?]+)")
    for method, path in server.requests:
        match = pattern.match(path)
        assert method == "GET" and match, path
        assert allowed(documents, "list", match["group"] or "", match["res"], match["ns"]), path


def test_the_committed_example_is_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview-role", "--stack", "aicloud-a"]) == 0
    assert capsys.readouterr().out == EXAMPLE.read_text(), "run `make golden` and review docs/rbac/preview-reader.yaml"
    assert "docs/rbac/preview-reader.yaml" in (PROJECT_DIR / ".github" / "workflows" / "preview.yml").read_text()


def test_the_subject_can_be_a_user_or_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview-role", "--stack", "dev", "--subject", "Group:previewers"]) == 0
    documents = _documents(capsys.readouterr().out)
    assert "ServiceAccount" not in {d["kind"] for d in documents}
    assert all(
        d["subjects"] == [{"kind": "Group", "name": "previewers", "apiGroup": "rbac.authorization.k8s.io"}]
        for d in documents
        if "subjects" in d
    )
    assert main(["preview-role", "--stack", "dev", "--subject", "Robot:x"]) == 2


@pytest.mark.parametrize(
    "subject",
    [
        "ServiceAccount:Kube_System/reader",
        "ServiceAccount:kube-system/",
        "ServiceAccount:kube-system/Bad Name",
        "User:",
        "Group:a\tb",
    ],
)
def test_a_subject_the_api_server_would_not_take_is_refused(subject: str) -> None:
    with pytest.raises(ValueError, match=r"ServiceAccount|namespace"):
        Subject.parse(subject)
