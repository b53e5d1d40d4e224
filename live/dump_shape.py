"""The shape a cluster dump must have before anything reads it.

A dump is written by `kubectl get -o json`, but it is a file: it may be cut short, edited by hand
or not a dump at all. Every object of a kind the preflight and the topology import read is checked
here for the fields they read (names that are DNS names, labels that are strings, quantities that
parse, lists and mappings where Kubernetes has them), so a bad dump is an input error naming the
item and field, never a crash deep inside a check."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from config.errors import describe_value, join_path
from config.schema.go_regexp import go_regexp_problem
from config.schema.names import dns_subdomain_problem, label_value_problem, qualified_name_problem
from config.schema.quantity import quantity_problem

Path = tuple[object, ...]

# A dump of 50,000 pods spells few distinct label keys, label values and quantities: each is
# checked once. Object names are mostly distinct and are checked as they come.
_label_key_problem = lru_cache(maxsize=8192)(qualified_name_problem)
_label_value_problem = lru_cache(maxsize=8192)(label_value_problem)
_quantity_problem = lru_cache(maxsize=8192)(quantity_problem)
_namespace_problem = lru_cache(maxsize=8192)(dns_subdomain_problem)


class DumpShapeError(Exception):
    """One item of the dump does not have the shape of a Kubernetes object; the message says where."""


def _fail(path: Path, what: str, value: Any) -> DumpShapeError:
    return DumpShapeError(f"{join_path(*path)}: {what} (got {describe_value(value)})")


def _mapping(obj: Any, key: str, path: Path, required: bool = False) -> dict[str, Any]:
    value = obj.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _fail((*path, key), "must be a mapping", value)
    return value


def _strings(mapping: dict[str, Any], path: Path, key_check: Callable[[str], str | None] | None = None) -> None:
    for key, value in mapping.items():
        if key_check is not None and (problem := key_check(key)):
            raise _fail((*path, key), f"not a valid key: {problem}", key)
        if not isinstance(value, str):
            raise _fail((*path, key), "must be a string", value)


def _quantities(mapping: dict[str, Any], path: Path) -> None:
    for key, value in mapping.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or _quantity_problem(str(value)):
            raise _fail((*path, key), "must be a Kubernetes quantity such as `8` or `64Gi`", value)


INT32 = (-(2**31), 2**31 - 1)


def _integer(obj: dict[str, Any], key: str, path: Path, low: int = INT32[0], high: int = INT32[1]) -> None:
    """An integer field the API server would have taken (int32 unless narrower), when present."""
    value = obj.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail((*path, key), f"must be an integer from {low} to {high}", value)


def _list_of_mappings(obj: dict[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _fail((*path, key), "must be a list of mappings", value)
    return value


def check_metadata(obj: dict[str, Any], path: Path) -> None:
    metadata = _mapping(obj, "metadata", path, required=True)
    name = metadata.get("name")
    if not isinstance(name, str):
        raise _fail((*path, "metadata", "name"), "must be a string", name)
    if dns_subdomain_problem(name):
        raise _fail((*path, "metadata", "name"), "must be a DNS subdomain name", name)
    namespace = metadata.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or _namespace_problem(namespace)):
        raise _fail((*path, "metadata", "namespace"), "must be a namespace name", namespace)
    _strings(_mapping(metadata, "labels", (*path, "metadata")), (*path, "metadata", "labels"), _label_key_problem)
    labels = metadata.get("labels") or {}
    for key, value in labels.items():
        if _label_value_problem(value):
            raise _fail((*path, "metadata", "labels", key), "not a valid label value", value)
    _strings(_mapping(metadata, "annotations", (*path, "metadata")), (*path, "metadata", "annotations"))


def _node(obj: dict[str, Any], path: Path) -> None:
    status = _mapping(obj, "status", path)
    for key in ("allocatable", "capacity"):
        _quantities(_mapping(status, key, (*path, "status")), (*path, "status", key))
    spec = _mapping(obj, "spec", path)
    for index, taint in enumerate(_list_of_mappings(spec, "taints", (*path, "spec"))):
        _strings({k: v for k, v in taint.items() if k in ("key", "value", "effect")}, (*path, "spec", "taints", index))


def _queue(obj: dict[str, Any], path: Path) -> None:
    spec, spec_path = _mapping(obj, "spec", path), (*path, "spec")
    for key in ("capability", "deserved"):
        _quantities(_mapping(spec, key, spec_path), (*spec_path, key))
    guarantee = _mapping(spec, "guarantee", spec_path)
    _quantities(_mapping(guarantee, "resource", (*spec_path, "guarantee")), (*spec_path, "guarantee", "resource"))
    _integer(spec, "weight", spec_path, 1)  # Volcano's webhook refuses a weight below 1
    _integer(spec, "priority", spec_path)
    if spec.get("parent") is not None and not isinstance(spec.get("parent"), str):
        raise _fail((*spec_path, "parent"), "must be a string", spec.get("parent"))
    status = _mapping(obj, "status", path)
    _quantities(_mapping(status, "allocated", (*path, "status")), (*path, "status", "allocated"))


def _crd(obj: dict[str, Any], path: Path) -> None:
    spec = _mapping(obj, "spec", path)
    if not isinstance(spec.get("group", ""), str):
        raise _fail((*path, "spec", "group"), "must be a string", spec.get("group"))
    for index, version in enumerate(_list_of_mappings(spec, "versions", (*path, "spec"))):
        if not isinstance(version.get("name"), str):
            raise _fail((*path, "spec", "versions", index, "name"), "must be a string", version.get("name"))


def _workload(obj: dict[str, Any], path: Path) -> None:
    """A pod template with at least one container, which the API server requires of a workload."""
    spec = _mapping(obj, "spec", path, required=True)
    template = _mapping(spec, "template", (*path, "spec"), required=True)
    pod = _mapping(template, "spec", (*path, "spec", "template"), required=True)
    if not _list_of_mappings(pod, "containers", (*path, "spec", "template", "spec")):
        raise _fail((*path, "spec", "template", "spec", "containers"), "must list at least one container", None)


def _pod(obj: dict[str, Any], path: Path) -> None:
    spec = _mapping(obj, "spec", path)
    for key in ("nodeName", "priorityClassName", "schedulerName"):
        if spec.get(key) is not None and not isinstance(spec.get(key), str):
            raise _fail((*path, "spec", key), "must be a string", spec.get(key))
    _integer(spec, "priority", (*path, "spec"))
    for list_key in ("containers", "initContainers"):
        for index, container in enumerate(_list_of_mappings(spec, list_key, (*path, "spec"))):
            where = (*path, "spec", list_key, index)
            resources = _mapping(container, "resources", where)
            _quantities(_mapping(resources, "requests", (*where, "resources")), (*where, "resources", "requests"))
    _strings(_mapping(spec, "nodeSelector", (*path, "spec")), (*path, "spec", "nodeSelector"))
    _list_of_mappings(spec, "tolerations", (*path, "spec"))
    phase = _mapping(obj, "status", path).get("phase")
    if phase is not None and not isinstance(phase, str):
        raise _fail((*path, "status", "phase"), "must be a string", phase)


def _priority_class(obj: dict[str, Any], path: Path) -> None:
    if obj.get("value") is None:
        raise _fail((*path, "value"), "must be given", None)
    _integer(obj, "value", path)
    policy = obj.get("preemptionPolicy")
    if policy is not None and not isinstance(policy, str):
        raise _fail((*path, "preemptionPolicy"), "must be a string", policy)


def _pod_group(obj: dict[str, Any], path: Path) -> None:
    spec = _mapping(obj, "spec", path)
    _integer(spec, "minMember", (*path, "spec"), 0)
    topology = _mapping(spec, "networkTopology", (*path, "spec"))
    _integer(topology, "highestTierAllowed", (*path, "spec", "networkTopology"), 0)
    if topology.get("mode") is not None and not isinstance(topology.get("mode"), str):
        raise _fail((*path, "spec", "networkTopology", "mode"), "must be a string", topology.get("mode"))
    for key in ("queue", "priorityClassName"):
        if spec.get(key) is not None and not isinstance(spec.get(key), str):
            raise _fail((*path, "spec", key), "must be a string", spec.get(key))
    _quantities(_mapping(spec, "minResources", (*path, "spec")), (*path, "spec", "minResources"))
    for index, policy in enumerate(_list_of_mappings(spec, "subGroupPolicy", (*path, "spec"))):
        for key in ("subGroupSize", "minSubGroups"):
            _integer(policy, key, (*path, "spec", "subGroupPolicy", index), 0)
    members = _mapping(spec, "minTaskMember", (*path, "spec"))
    for task in members:
        _integer(members, task, (*path, "spec", "minTaskMember"), 0)


def _hyper_node(obj: dict[str, Any], path: Path) -> None:
    """Members are mappings with a mapping selector (preflight's `hypernode-two-parents`, the
    what-if's topology)."""
    spec_path = (*path, "spec")
    _integer(_mapping(obj, "spec", path), "tier", spec_path, 0)
    for index, member in enumerate(_list_of_mappings(_mapping(obj, "spec", path), "members", spec_path)):
        member_path = (*spec_path, "members", index)
        selector = _mapping(member, "selector", member_path)
        exact = _mapping(selector, "exactMatch", (*member_path, "selector"))
        name = exact.get("name")
        if name is not None and not isinstance(name, str):
            raise _fail((*member_path, "selector", "exactMatch", "name"), "must be a string", name)
        regex = _mapping(selector, "regexMatch", (*member_path, "selector"))
        pattern = regex.get("pattern")
        where = (*member_path, "selector", "regexMatch", "pattern")
        if pattern is not None and not isinstance(pattern, str):
            raise _fail(where, "must be a string", pattern)
        if pattern is not None and (problem := go_regexp_problem(pattern)):
            raise _fail(where, f"not a regular expression Volcano's Go code compiles ({problem})", pattern)


KIND_CHECKS: dict[str, Callable[[dict[str, Any], Path], None]] = {
    "HyperNode": _hyper_node,
    "Node": _node,
    "Queue": _queue,
    "CustomResourceDefinition": _crd,
    "Deployment": _workload,
    "Pod": _pod,
    "PodGroup": _pod_group,
    "PriorityClass": _priority_class,
}


def check_object(obj: dict[str, Any], path: Path) -> None:
    """Raise DumpShapeError when `obj` lacks the shape the readers rely on."""
    check_metadata(obj, path)
    for key in ("spec", "status"):
        _mapping(obj, key, path)
    kind_check = KIND_CHECKS.get(str(obj.get("kind")))
    if kind_check is not None:
        kind_check(obj, path)
