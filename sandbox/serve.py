"""The process that keeps a sandbox running: it starts the cluster's processes, says it is ready,
and stops them all when it is told to (SIGTERM or SIGINT) or when one of them dies.

    python -m sandbox.serve <folder>     # what `volcano-platform sandbox up` starts, detached

`<folder>` holds `nodes.json` (the nodes to fake); the cluster's own files go to `<folder>/cluster`,
`ready` appears once every node is Ready, and `serve.log` says what happened.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from sandbox.cluster import LocalCluster
from sandbox.programs import programs

READY = "ready"
NODES = "nodes.json"
CHECK_SECONDS = 5.0


def serve(folder: Path) -> int:
    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    nodes = json.loads((folder / NODES).read_text())
    cluster = LocalCluster(folder / "cluster", programs())
    try:
        cluster.start(nodes)
        (folder / READY).write_text(str(cluster.kubeconfig))
        print(f"ready: {len(nodes)} node(s), kubeconfig {cluster.kubeconfig}", flush=True)
        while not stop.wait(CHECK_SECONDS):
            dead = [p.name for p in cluster.processes if p.popen.poll() is not None]
            if dead:
                print(f"stopping: {', '.join(dead)} exited (see {cluster.folder / 'logs'})", flush=True)
                print(cluster.last_lines(), flush=True)
                return 1
        return 0
    finally:
        (folder / READY).unlink(missing_ok=True)
        cluster.stop()
        print("stopped", flush=True)


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1])))
