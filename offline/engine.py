"""Run the unchanged Pulumi program in-process under Pulumi's mock runtime and record what it
registers: types, names, inputs and resource options. No cluster, credentials or CLI needed.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import gc
import logging
import os
import runpy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format  # type: ignore[import-untyped]
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc
from pulumi.runtime import settings as sdk_settings
from pulumi.runtime._callbacks import _CallbackServicer
from pulumi.runtime.proto import resource_pb2, source_pb2

from config import PROJECT, ConfigError, PlatformSpec
from config.stack_file.includes import STACK_DIR_VARIABLE
from config.stack_file.reader import SECRET_PLACEHOLDER, StackFile

STACK_TYPE = "pulumi:pulumi:Stack"
# How the SDK marks a secret value in deserialized properties.
_SECRET_SIG = rpc._special_sig_key
_SECRET_VALUE = rpc._special_secret_sig


@dataclass
class Registration:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    replace_on_changes: list[str] = field(default_factory=list)
    ignore_changes: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    provider: str = ""
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    import_id: str = ""
    """ID of an existing object the resource takes over (`import_`)."""
    aliases: list[str] = field(default_factory=list)
    """Earlier identities the program declares, e.g. `type=<old type>` (the engine applies them to
    the children too). pulumi-kubernetes' own aliases to older API versions are left out."""


@dataclass
class RunResult:
    registrations: list[Registration]
    outputs: dict[str, Any]
    warnings: list[str]
    duplicates: list[str]
    spec: PlatformSpec | None
    """The spec the program built (`__main__.spec`), for summaries and checks."""
    config_error: ConfigError | None = None
    """Set when the program stopped on invalid config (then nothing should be registered)."""


class ProgramError(Exception):
    """The program failed for a reason other than invalid config (a bug)."""


def redact(value: Any) -> Any:
    """A secret value with its shape kept: mappings keep their keys and lists their length, every
    leaf becomes the placeholder (a Secret's `stringData` stays a mapping, as the schema wants)."""
    if isinstance(value, dict):
        if value.get(_SECRET_SIG) == _SECRET_VALUE:
            return redact(value.get("value"))
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return SECRET_PLACEHOLDER


def clean(value: Any) -> Any:
    """Inputs as plain data: secrets are redacted (shape kept), integral floats become ints (the
    mock runtime hands every number over as a float)."""
    if isinstance(value, dict):
        if value.get(_SECRET_SIG) == _SECRET_VALUE:
            return redact(value.get("value"))
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class _Mocks(pulumi_mocks.Mocks):
    """The SDK's mock interface: `_RecordingMonitor` answers registrations itself, so only `call`
    (an invoke) is ever asked."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        return {}, None


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """Records every registration with its options; remembers URNs registered twice (the stock
    mock monitor silently overwrites them, the real engine refuses)."""

    def __init__(self, mocks: pulumi_mocks.Mocks):
        super().__init__(mocks)
        self.registrations: dict[str, Registration] = {}
        self.duplicates: list[str] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type != STACK_TYPE:
            if urn in self.registrations:
                self.duplicates.append(urn)
            self.registrations[urn] = Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=bool(request.custom),
                # The wire form, not the SDK's deserialisation, which marks a whole mapping secret when one
                # value in it is: a secret stays where the program put it, as the real engine stores it.
                inputs=clean(json_format.MessageToDict(request.object)),
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                delete_before_replace=bool(request.deleteBeforeReplace),
                replace_on_changes=list(request.replaceOnChanges),
                ignore_changes=list(request.ignoreChanges),
                dependencies=sorted(set(request.dependencies)),
                provider=request.provider,
                import_id=request.importId,
                aliases=[a for a in map(_describe_alias, request.aliases) if not a.startswith("type=kubernetes:")],
                custom_timeouts={
                    key: value
                    for key in ("create", "update", "delete")
                    if (value := getattr(request.customTimeouts, key))
                },
            )
        return self._echo(urn, request)

    @staticmethod
    def _echo(urn: str, request: Any) -> Any:
        """What a provider that creates a resource exactly as asked would answer: its inputs, as
        they came. The stock mock monitor reads them into Python values and writes them back
        (a sixth of a run), which also turns a mapping holding one secret into a secret mapping;
        nothing the program does reads a resource's outputs back by URN (`Resource.get`), which
        is what the stock monitor keeps its copy for."""
        if request.type == STACK_TYPE:
            return resource_pb2.RegisterResourceResponse(urn=urn)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=f"{request.name}-id", object=request.object)


def _describe_alias(alias: Any) -> str:
    spec = alias.spec if alias.HasField("spec") else None
    if spec is None:
        return f"urn={alias.urn}"
    parts = [f"{key}={value}" for key, value in (("name", spec.name), ("type", spec.type)) if value]
    return ",".join(parts) or "parent-change"


class _WarningLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _TrackingPolicy(asyncio.DefaultEventLoopPolicy):
    """Remembers every event loop created during a run (the run loop, the idle loop the monitor's
    calls see, any the SDK makes with `_ensure_event_loop`), so that the run closes them all: a
    loop left open is finalised at interpreter exit and prints `Exception ignored in
    BaseEventLoop.__del__`."""

    def __init__(self) -> None:
        super().__init__()
        self.loops: list[asyncio.AbstractEventLoop] = []

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        self.loops.append(loop)
        return loop


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs what the SDK hands to the run loop's worker threads (each call to the mock monitor)
    at once on the loop's own thread. Those calls are synchronous and never wait for the loop, so
    they need no thread of their own; handing each of a run's hundreds of registrations to a worker
    and waking the loop when it is done was a tenth of an example render on two cores. A call sees
    what a worker would: no running loop, and an idle loop of its own for the SDK's `_sync_await`
    (`pulumi/runtime/sync_await.py`), which runs it to completion. (A loop takes only a thread
    pool as its default executor; this one never starts a thread.)"""

    def __init__(self, idle: asyncio.AbstractEventLoop) -> None:
        super().__init__(max_workers=1)
        self._idle = idle

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        running = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        asyncio.set_event_loop(self._idle)
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting task, as a worker thread would
            future.set_exception(exc)
        finally:
            asyncio.set_event_loop(running)
            asyncio.events._set_running_loop(running)
        return future


class _OfflineCallbacks(_CallbackServicer):
    """The SDK's callback server without its gRPC server. The program registers error hooks
    (`components/inference/gang_reason.py`); the SDK starts a server for the engine to call them
    back, which only a real deployment does. Registering still goes through the mock monitor."""

    def __init__(self, monitor: Any) -> None:  # the base's would start the server
        self._callbacks = {}
        self._transforms = {}
        self._state_migrations = {}
        self._monitor = monitor
        self._target = "offline"


def _close_event_loops(policy: _TrackingPolicy) -> None:
    """Close every loop the run created (its executor started no thread to join)."""
    for created in policy.loops:
        if not created.is_closed() and not created.is_running():
            created.close()
    asyncio.set_event_loop(None)


def _config_error(exc: BaseException) -> ConfigError | None:
    """The ConfigError an exception was raised from, if any. The SDK re-raises a failed
    registration from the first failure it saw, which can make the chain a loop."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        if isinstance(seen, ConfigError):
            return seen
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return None


@contextlib.contextmanager
def _engine_only_shortcuts() -> Iterator[None]:
    """What the offline engine may skip because nothing here reads it, and what it must undo
    because one process renders many stacks (tests, `diff`).

    - The SDK records a stack trace with every registration (it walks and stats every frame; a
      tenth of a large run) for the real engine's diagnostics; the mock monitor never reads it.
    - The program turns the cyclic collector off for its one long run and has the heap frozen at
      exit (`__main__.py`); afterwards the process gets its own collector setting back and no
      exit hook, so the run's cycles are collected.
    """
    capture = getattr(sdk_resource, "_get_stack_trace", None)
    if capture is not None:
        sdk_resource._get_stack_trace = source_pb2.StackTrace  # an empty trace, as for an unknown caller
    enabled = gc.isenabled()
    try:
        yield
    finally:
        if capture is not None:
            sdk_resource._get_stack_trace = capture
        atexit.unregister(gc.freeze)
        (gc.enable if enabled else gc.disable)()


def _run(stack: StackFile, body: Callable[[], dict[str, Any]]) -> RunResult:
    """Run `body` (which returns the program's module globals) under the mock runtime, on an
    event loop of its own."""
    with _engine_only_shortcuts(), _stack_dir(stack):
        return _run_mocked(stack, body)


@contextlib.contextmanager
def _stack_dir(stack: StackFile) -> Iterator[None]:
    """Tell the program where the stack file is, so that it reads included files from there (under
    the CLI the stack files are in the project directory, where the program looks by default)."""
    previous = os.environ.get(STACK_DIR_VARIABLE)
    if stack.path is not None:
        os.environ[STACK_DIR_VARIABLE] = str(stack.path.resolve().parent)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(STACK_DIR_VARIABLE, None)
        else:
            os.environ[STACK_DIR_VARIABLE] = previous


def _run_mocked(stack: StackFile, body: Callable[[], dict[str, Any]]) -> RunResult:
    previous_policy = asyncio.get_event_loop_policy()
    policy = _TrackingPolicy()
    asyncio.set_event_loop_policy(policy)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_default_executor(_InlineExecutor(policy.new_event_loop()))
    mocks = _Mocks()
    monitor = _RecordingMonitor(mocks)
    logger = logging.getLogger(f"offline-engine-{id(monitor)}")
    logger.propagate = False
    handler = _WarningLog()
    logger.addHandler(handler)
    pulumi_mocks.set_mocks(mocks, project=PROJECT, stack=stack.stack, preview=False, monitor=monitor, logger=logger)
    pulumi.runtime.set_all_config(stack.pulumi_config, sorted(stack.secret_keys))
    sdk_settings.SETTINGS.callbacks = _OfflineCallbacks(monitor)

    namespace: dict[str, Any] = {}
    outputs: dict[str, Any] = {}

    def program() -> pulumi.Output[None]:
        namespace.update(body())
        # The mock runtime finishes the root stack before the program runs, so exports never
        # reach the monitor; resolve them here instead.
        root = pulumi.runtime.get_root_resource()
        exported = getattr(root, "outputs", {}) or {}
        return pulumi.Output.from_input(exported).apply(lambda values: outputs.update(clean(values)))

    config_error: ConfigError | None = None
    try:
        pulumi.runtime.test(program)()
    except Exception as exc:
        config_error = _config_error(exc)
        if config_error is None:
            raise ProgramError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        logger.removeHandler(handler)
        _close_event_loops(policy)
        asyncio.set_event_loop_policy(previous_policy)
    spec = namespace.get("spec")
    return RunResult(
        list(monitor.registrations.values()),
        outputs,
        handler.messages,
        monitor.duplicates,
        spec if isinstance(spec, PlatformSpec) else None,
        config_error,
    )


def run_program(project_dir: Path, stack: StackFile) -> RunResult:
    """Run `__main__.py` of `project_dir` for one stack, isolated from any earlier run in this
    process (the SDK keeps its settings and root stack in context variables)."""
    return run_callable(stack, lambda: runpy.run_path(str(project_dir), run_name="__main__"))


def run_callable(stack: StackFile, body: Callable[[], dict[str, Any]]) -> RunResult:
    """Run any program body under the same engine (the benchmark's SDK floor uses it)."""
    return contextvars.Context().run(_run, stack, body)
