"""The size of the config the Pulumi CLI hands to the program.

The Python language host passes every config value of the stack in one environment variable,
`PULUMI_CONFIG` (pulumi `sdk/python/cmd/pulumi-language-python/main.go`), and the policy analyzer
does the same (`sdk/go/common/resource/plugin/analyzer_plugin.go`; pulumi/pulumi#20402). Linux
limits one environment string to `MAX_ARG_STRLEN`, 131,072 bytes with `PULUMI_CONFIG=` and the
final NUL: past it `execve` fails with E2BIG and `pulumi preview` dies before the program starts.
The loader measures the variable as Go's `json.Marshal` writes it (compact, `<`, `>`, `&`, U+2028
and U+2029 escaped to six characters) and refuses a stack that comes near the limit, naming the
sections to move into files (`include`)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from config.errors import Problem
from config.project import PROJECT

ENVIRONMENT_LIMIT = 131_072
"""`MAX_ARG_STRLEN`: one environment string, `NAME=value` and its NUL."""
VARIABLE = "PULUMI_CONFIG"
REFUSE_ABOVE = 120 * 1024
"""Refused from here: room for the CLI's own keys and for an edit that adds a little."""
WARN_ABOVE = 96 * 1024
_ESCAPED_BY_GO = ("<", ">", "&", "\u2028", "\u2029")


def handover_bytes(config: Mapping[str, str]) -> int:
    """Bytes of `PULUMI_CONFIG=<json>` plus its NUL, for the config values the CLI hands over."""
    text = json.dumps(dict(config), separators=(",", ":"), ensure_ascii=False)
    escaped = sum(text.count(ch) for ch in _ESCAPED_BY_GO)
    return len(VARIABLE) + 1 + len(text.encode()) + 5 * escaped + 1


def handover_problems(config: Mapping[str, str]) -> list[Problem]:
    size = handover_bytes(config)
    if size <= WARN_ABOVE:
        return []
    sizes = sorted(
        ((len(value.encode()), key.removeprefix(f"{PROJECT}:")) for key, value in config.items()), reverse=True
    )
    biggest = ", ".join(f"`{key}` {amount // 1024} KiB" for amount, key in sizes[:3])
    largest = sizes[0][1]
    return [
        Problem(
            largest,
            f"the stack file's config is {size / 1024:.0f} KiB as the Pulumi CLI hands it to the program (one "
            f"environment variable, at most {ENVIRONMENT_LIMIT // 1024} KiB on Linux; past it `pulumi preview` fails "
            f"with 'argument list too long' before the program starts); the largest sections: {biggest}",
            f"move `{largest}` into files named under `include` (`include: {{files: [...]}}`, or one file per "
            "tenant with `include: {tenants: [...]}`): the program reads those itself",
            severity="error" if size > REFUSE_ABOVE else "warning",
        )
    ]
