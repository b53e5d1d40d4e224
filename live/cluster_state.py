"""What a cluster has, read once: from the API server (GET and LIST only) or from a file.

The file form is a Kubernetes `List`, JSON or YAML, as `kubectl get ... -o json` writes it:

    kubectl get nodes,namespaces,pods,priorityclasses,deployments,services,\\
    queues.scheduling.volcano.sh,podgroups.scheduling.volcano.sh,hypernodes.topology.volcano.sh,\\
    leaderworkersets.leaderworkerset.x-k8s.io,customresourcedefinitions -A -o json \\
    --show-managed-fields > cluster.json

(`--show-managed-fields`: kubectl leaves out `metadata.managedFields` otherwise, and the preflight
names the field manager of every field an adoption changes.)

Pods are read for the what-if (what runs where); Secrets, logs and exec never are.
Both forms give the same `ClusterState`, so the preflight, the what-if and the topology import work the same
on a recorded dump (reviewable in a pull request, usable offline) as on a live cluster.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic_core import from_json

from config.errors import describe_value, one_line
from live.dump_shape import DumpShapeError, check_object

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML has it: a dump of thousands of nodes parses in a fraction of the
pure-Python loader's time."""
LIST_TIMEOUT = (10, 120)
"""Seconds to connect and to read one LIST: a cluster that stops answering ends the command with a
message instead of holding it (and the workflow job) forever."""


class StateError(Exception):
    """The cluster or the file could not be read; the message says which and why."""


@dataclass(frozen=True)
class Kind:
    key: str
    """Attribute of `ClusterState` holding the objects."""
    kind: str
    group: str
    version: str
    plural: str


KINDS: tuple[Kind, ...] = (
    Kind("nodes", "Node", "", "v1", "nodes"),
    Kind("namespaces", "Namespace", "", "v1", "namespaces"),
    Kind("pods", "Pod", "", "v1", "pods"),
    Kind("services", "Service", "", "v1", "services"),
    Kind("persistent_volume_claims", "PersistentVolumeClaim", "", "v1", "persistentvolumeclaims"),
    Kind("storage_classes", "StorageClass", "storage.k8s.io", "v1", "storageclasses"),
    Kind("priority_classes", "PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses"),
    Kind("deployments", "Deployment", "apps", "v1", "deployments"),
    Kind("queues", "Queue", "scheduling.volcano.sh", "v1beta1", "queues"),
    Kind("pod_groups", "PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups"),
    Kind("hyper_nodes", "HyperNode", "topology.volcano.sh", "v1alpha1", "hypernodes"),
    Kind("leader_worker_sets", "LeaderWorkerSet", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    Kind("gateway_classes", "GatewayClass", "gateway.networking.k8s.io", "v1", "gatewayclasses"),
    Kind("gateways", "Gateway", "gateway.networking.k8s.io", "v1", "gateways"),
    Kind("inference_pools", "InferencePool", "inference.networking.k8s.io", "v1", "inferencepools"),
    Kind("crds", "CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions"),
    # The gateway implementations' own policies that can remove a client's headers before the
    # router reads them (docs/operations.md, "Tenant isolation").
    Kind("header_policies", "ClientTrafficPolicy", "gateway.envoyproxy.io", "v1alpha1", "clienttrafficpolicies"),
    Kind("header_policies", "ListenerPolicy", "gateway.kgateway.dev", "v1alpha1", "listenerpolicies"),
    Kind("header_policies", "AgentgatewayPolicy", "agentgateway.dev", "v1alpha1", "agentgatewaypolicies"),
    Kind("header_policies", "EnvoyFilter", "networking.istio.io", "v1alpha3", "envoyfilters"),
)
DUMP_COMMAND = (
    "kubectl get nodes,namespaces,pods,priorityclasses,deployments,services,persistentvolumeclaims,storageclasses,"
    "queues.scheduling.volcano.sh,"
    "podgroups.scheduling.volcano.sh,hypernodes.topology.volcano.sh,leaderworkersets.leaderworkerset.x-k8s.io,"
    "customresourcedefinitions -A -o json --show-managed-fields > cluster.json"
)


@dataclass
class ClusterState:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    """Every pod: what runs where, for the what-if (`whatif`)."""
    services: list[dict[str, Any]] = field(default_factory=list)
    persistent_volume_claims: list[dict[str, Any]] = field(default_factory=list)
    """Claims, for the weight volumes models mount."""
    storage_classes: list[dict[str, Any]] = field(default_factory=list)
    """StorageClasses, for the access modes of the claims the stack creates."""
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    deployments: list[dict[str, Any]] = field(default_factory=list)
    queues: list[dict[str, Any]] = field(default_factory=list)
    pod_groups: list[dict[str, Any]] = field(default_factory=list)
    hyper_nodes: list[dict[str, Any]] = field(default_factory=list)
    leader_worker_sets: list[dict[str, Any]] = field(default_factory=list)
    gateway_classes: list[dict[str, Any]] = field(default_factory=list)
    gateways: list[dict[str, Any]] = field(default_factory=list)
    inference_pools: list[dict[str, Any]] = field(default_factory=list)
    """The gateway's: whether its class is Accepted, its listeners, and whether each pool is
    accepted by the Gateway it is routed from. Not in `DUMP_COMMAND` (kubectl refuses a kind whose
    CRD is missing): a dump of a cluster with a gateway adds them (docs/operations.md)."""
    crds: list[dict[str, Any]] = field(default_factory=list)
    header_policies: list[dict[str, Any]] = field(default_factory=list)
    """Envoy Gateway's ClientTrafficPolicies, kgateway's ListenerPolicies, agentgateway's policies and
    Istio's EnvoyFilters: where a gateway removes headers before its ext-proc (the router) runs."""
    restarting_groups: set[tuple[str, str, str]] = field(default_factory=set)
    """LeaderWorkerSet groups (namespace, LeaderWorkerSet, group index) whose controller is making
    them again: their pods arrive only once the rest of the group has gone and the scheduler has
    settled without them (what `whatif --lose` leaves after a group lost a pod)."""
    remade_models: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, model) of the stack's models whose lost pods `whatif --lose` makes again as their
    controllers would: on the cluster although none of their pods is left, not created by `up`."""
    listed: set[str] = field(default_factory=set)
    """Kinds read: every kind the cluster serves, or those a dump holds (a dump may leave out a kind
    that exists; a check that needs one says so instead of calling it missing)."""
    source: str = ""
    """Where the state was read from (for reports)."""

    def find(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self._by_name.get((kind, namespace, name))

    @cached_property
    def _by_name(self) -> dict[tuple[str, str | None, str], dict[str, Any]]:
        """Every object by (kind, namespace, name), built on the first lookup once the state is
        read (preflight looks up each of the thousands of objects a large stack renders)."""
        index: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        for kind in KINDS:
            for obj in getattr(self, kind.key):
                metadata = obj.get("metadata", {})
                index.setdefault((kind.kind, metadata.get("namespace"), metadata.get("name")), obj)
        return index

    def crd(self, plural_group: str) -> dict[str, Any] | None:
        """The CRD named `<plural>.<group>`, e.g. `queues.scheduling.volcano.sh`."""
        return next((c for c in self.crds if c.get("metadata", {}).get("name") == plural_group), None)


def _kind_of(obj: dict[str, Any]) -> Kind | None:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    for kind in KINDS:
        if obj.get("kind") == kind.kind and group == kind.group:
            return kind
    return None


def state_from_objects(objects: list[Any], source: str) -> ClusterState:
    state = ClusterState(source=source)
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise StateError(f"{source}: items[{index}] is not an object (got {describe_value(obj)})")
        kind = _kind_of(obj)
        if kind is not None:
            try:
                check_object(obj, ("items", index))
            except DumpShapeError as error:
                raise StateError(f"{source}: {error}") from None
            getattr(state, kind.key).append(obj)
            state.listed.add(kind.kind)
    return state


def _json(text: str) -> Any:
    """pydantic-core's parser, about a third faster than the standard one on a large dump; it
    stops at 200 levels of nesting, where the standard one goes on (and reports what it cannot)."""
    try:
        return from_json(text)
    except ValueError as error:
        if "recursion limit" not in str(error):
            raise
        return json.loads(text)


def without_nulls(value: Any) -> Any:
    """An object with every field set to null left out, as the API server reads it: a field set to
    null is a field not set (`status: null` is no status), so every reader can take a missing
    mapping for an empty one. Items of lists are kept as they are (a null where an object belongs
    is refused by the dump's shape check, naming its place). JSON from `kubectl get` seldom holds a
    null, so it is walked only when its text has one."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


MAX_DUMP_BYTES = 2 * 1024**3
"""Larger than `kubectl get` writes for the kinds read of any cluster the platform is built for;
a bigger file is refused before it is read."""


def read_file(path: Path) -> ClusterState:
    """A `List` (or a single object) in JSON or YAML."""
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise StateError(f"{path} is {size:,} bytes, more than the {MAX_DUMP_BYTES:,} a dump may be")
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise StateError(f"cannot read {path}: {error}") from None
    try:
        is_json = text.lstrip().startswith(("{", "["))
        if not is_json and _ALIAS.search(text) and _alias_growth(text) > MAX_ALIAS_VALUES:
            raise StateError(
                f"{path}: its YAML aliases (`*name`) expand to more than {MAX_ALIAS_VALUES:,} values, which no "
                f"cluster's objects hold; write the dump with `{DUMP_COMMAND}` (it writes no aliases)"
            )
        data = _json(text) if is_json else yaml.load(text, Loader=_YAML_LOADER)
        objects = _objects(path, data)
        if not is_json or "null" in text:
            objects = [without_nulls(obj) for obj in objects]
    except (ValueError, yaml.YAMLError) as error:
        raise StateError(f"{path} is neither JSON nor YAML: {one_line(str(error))}") from None
    except RecursionError:
        raise StateError(f"{path} nests values deeper than any Kubernetes object does") from None
    return state_from_objects(objects, str(path))


def _objects(path: Path, data: Any) -> list[Any]:
    """The objects of a `List`, a list, or a single object."""
    if isinstance(data, dict) and "items" in data:
        if not isinstance(data["items"], list):
            raise StateError(f"{path}: items must be a list (got {describe_value(data['items'])})")
        return data["items"]
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and "kind" in data:
        return [data]
    raise StateError(f"{path} is not a Kubernetes List; write it with `{DUMP_COMMAND}`")


MAX_ALIAS_VALUES = 2_000_000
"""Values aliases may add when expanded (a PyYAML dump shares repeated label maps as `&id001`);
nested aliases beyond it are a bomb, refused before one value is built."""
_ALIAS = re.compile(r"(?:^|[\s\[{,])\*[^\s,\[\]{}]")
"""Text that may be an alias; only then is the event stream counted."""


def _alias_growth(text: str) -> int:
    """How many values the aliases add once expanded, counted on libyaml's event stream (which
    builds no values), stopping past the bound: an anchored node's size is known when it closes,
    and each alias adds that size to every collection it is in."""
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, list[int]]] = []
    added = 0
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            open_nodes.append((event.anchor, [1]))
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, (size,) = open_nodes.pop()
            if anchor:
                sizes[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor or "", 1)
            added += size
            if added > MAX_ALIAS_VALUES:
                return added
        else:
            continue
        if open_nodes:
            open_nodes[-1][1][0] += size
    return added


def read_cluster(kubeconfig: str | None, context: str | None) -> ClusterState:
    """LIST every kind from the API server of `context` in `kubeconfig` (a path; default: the
    ambient kubeconfig). Kinds whose CRD is not installed are empty. Nothing is ever written."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    from urllib3.exceptions import HTTPError

    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
    except (ConfigException, OSError) as error:
        raise StateError(f"cannot load the kubeconfig: {error}") from None
    custom = client.CustomObjectsApi(api_client)
    state = ClusterState(source=f"the cluster of context `{context}`" if context else "the current context's cluster")
    builtin = {
        "nodes": lambda: client.CoreV1Api(api_client).list_node(_request_timeout=LIST_TIMEOUT),
        "namespaces": lambda: client.CoreV1Api(api_client).list_namespace(_request_timeout=LIST_TIMEOUT),
        "pods": lambda: client.CoreV1Api(api_client).list_pod_for_all_namespaces(_request_timeout=LIST_TIMEOUT),
        "services": lambda: client.CoreV1Api(api_client).list_service_for_all_namespaces(_request_timeout=LIST_TIMEOUT),
        "persistent_volume_claims": lambda: client.CoreV1Api(
            api_client
        ).list_persistent_volume_claim_for_all_namespaces(_request_timeout=LIST_TIMEOUT),
        "storage_classes": lambda: client.StorageV1Api(api_client).list_storage_class(_request_timeout=LIST_TIMEOUT),
        "priority_classes": lambda: client.SchedulingV1Api(api_client).list_priority_class(
            _request_timeout=LIST_TIMEOUT
        ),
        "deployments": lambda: client.AppsV1Api(api_client).list_deployment_for_all_namespaces(
            _request_timeout=LIST_TIMEOUT
        ),
        "crds": lambda: client.ApiextensionsV1Api(api_client).list_custom_resource_definition(
            _request_timeout=LIST_TIMEOUT
        ),
    }
    try:
        for kind in KINDS:
            if kind.key in builtin:
                listed: dict[str, Any] = api_client.sanitize_for_serialization(builtin[kind.key]())
                items = listed.get("items", [])
                for item in items:
                    item.setdefault("apiVersion", f"{kind.group}/{kind.version}".lstrip("/"))
                    item.setdefault("kind", kind.kind)
            else:
                try:
                    found = cast(
                        dict[str, Any],
                        custom.list_cluster_custom_object(
                            kind.group, kind.version, kind.plural, _request_timeout=LIST_TIMEOUT
                        ),
                    )
                    items = found.get("items", [])
                except ApiException as error:
                    if error.status == 404:  # the CRD (or this version of it) is not installed
                        continue
                    raise
            getattr(state, kind.key).extend(items)
            state.listed.add(kind.kind)
    except ApiException as error:
        raise StateError(f"the API server refused a read ({error.status} {error.reason})") from None
    except (OSError, HTTPError) as error:
        raise StateError(f"cannot reach the API server: {error}") from None
    finally:
        api_client.close()
    return state
