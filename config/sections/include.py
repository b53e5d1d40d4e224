"""`include`: sections of a stack kept in files of the repository instead of the stack file."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from config.schema.base import ConfigModel
from config.stack_file.includes import MAX_PATTERN_LENGTH

IncludePattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_LENGTH)]


class IncludeConfig(ConfigModel):
    """Files whose sections join the stack's config. Paths are relative to the folder of the stack
    file (the project directory for committed stacks) and stay inside it: no absolute paths, no
    `..`, no links out; `*` and `?` match within one path component. The CLI hands the stack
    file's config to the program in one environment variable, limited to 128 KiB; files are read
    by the program itself, so a stack of any size stays under the limit."""

    files: tuple[IncludePattern, ...] = ()
    """Files holding any sections of the stack (`topology: ...`, `models: ...`). Entries of
    `tenants`, `models`, `priorityClasses` and `registries` join those of the stack file and the
    other files (a name defined twice is an error naming both places); any other section is written
    in one place only."""
    tenants: tuple[IncludePattern, ...] = ()
    """Tenant files: each holds one tenant under `tenants` and that tenant's models under `models`
    (a model's `tenant` defaults to it and may not name another), nothing else. With one file per
    tenant, a `CODEOWNERS` line per file lets each tenant team review its own changes."""
