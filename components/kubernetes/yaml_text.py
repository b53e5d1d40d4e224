"""YAML text that reads well in a diff: key order kept, multi-line strings as literal blocks."""

from __future__ import annotations

from typing import Any

import yaml


# libyaml's emitter when PyYAML was built with it (the pure-Python one is most of a render's
# writing time); both produce the same text for what this dumper is given.
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        # Literal blocks cannot carry trailing spaces; strip them so the block style is kept.
        value = "\n".join(line.rstrip() for line in value.split("\n"))
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump(data: Any, sort_keys: bool = False) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=sort_keys, default_flow_style=False, width=100, allow_unicode=True)
