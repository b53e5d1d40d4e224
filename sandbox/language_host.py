"""The Python language runtime `pulumi` calls to run the project's program, for the real CLI.

The Pulumi CLI runs a Python program through its `pulumi-language-python` plugin, a Go module the
Go module proxy does not serve (`github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3`:
403 on every version and commit). The pinned Python SDK carries the other implementation of the
same gRPC service, the one its Automation API uses for inline programs
(`pulumi.automation._server.LanguageServer`); this process serves it, running the project's
`__main__.py` on each `Run`, and the CLI is pointed at it with `--client`. What differs from the
plugin is only how the program is started: the engine, the config the CLI reads from the stack
file, the resource monitor and the provider are the real ones.

    python -m sandbox.language_host     # prints the port, serves until stdin closes
"""

from __future__ import annotations

import runpy
import sys
from concurrent import futures
from pathlib import Path

import grpc  # type: ignore[import-untyped]
from pulumi.automation._server import LanguageServer
from pulumi.runtime.proto import language_pb2_grpc

PROJECT = Path(__file__).resolve().parents[1]


def program() -> None:
    runpy.run_path(str(PROJECT / "__main__.py"), run_name="__main__")


def main() -> int:
    sys.path.insert(0, str(PROJECT))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4), options=[("grpc.max_receive_message_length", 1 << 30)]
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageServer(program), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # the caller closes stdin when its CLI command is done
    server.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
