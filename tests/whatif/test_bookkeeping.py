"""The engine's kept answers agree with counting again from the nodes: a HyperNode's most-free
node and its room per pod shape after any sequence of pods placed, pipelined, evicted and removed,
and node classes that only the labels pods select on split."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.scheduler.model import PENDING, PIPELINED, RELEASING, RUNNING, HyperNode, Job, Node, Queue, Task
from whatif.scheduler.resources import places_on, shape_of
from whatif.scheduler.session import Session

GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"


def _session(tasks: list[Task], selector: dict[str, str] | None = None) -> Session:
    nodes = {
        name: Node(name, {GPU: 8000.0, "cpu": 64000.0, "pods": 110.0}, {HOSTNAME: name, "leaf": "l0"})
        for name in ("n0", "n1", "n2", "n3")
    }
    job = Job("ns/job", "q", 1, "Running", tasks=tasks)
    if selector is not None:
        job.tasks.append(Task("ns/picky", "ns/job", {GPU: 1000.0, "pods": 1.0}, node_selector=selector))
    session = Session(nodes, {"q": Queue("q")}, {job.uid: job}, hypernodes={"l0": HyperNode("l0", 1, frozenset(nodes))})
    session.index_hypernodes()
    return session


def test_nodes_that_differ_only_by_labels_no_pod_selects_on_are_one_class() -> None:
    assert len(_session([]).classes) == 1
    assert len(_session([], selector={HOSTNAME: "n0"}).classes) == 4
    assert len(_session([], selector={"leaf": "l0"}).classes) == 1


MOVES = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from([RUNNING, PIPELINED, RELEASING, PENDING]), st.integers(0, 3)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(moves=MOVES, gpus=st.lists(st.sampled_from([1000.0, 2000.0, 4000.0, 8000.0]), min_size=6, max_size=6))
def test_a_hypernodes_kept_peak_and_room_match_its_nodes_after_any_moves(
    moves: list[tuple[int, str, int]], gpus: list[float]
) -> None:
    tasks = [Task(f"ns/p{i}", "ns/job", {GPU: gpus[i], "pods": 1.0}) for i in range(6)]
    session = _session(tasks)
    shapes = [shape_of({GPU: 2000.0, "pods": 1.0}), shape_of({GPU: 8000.0, "pods": 1.0})]
    for index, status, node in moves:
        task = tasks[index]
        if task.status != PENDING:
            session.set_status(task, PENDING)
        if status != PENDING:
            session.set_status(task, status, f"n{node}")
        members = session.hypernode_totals["l0"].members
        peak = session.peak_future_idle("l0")
        assert peak is not None
        for resource in (GPU, "cpu", "pods"):
            assert peak[resource] == max(n.future_idle.get(resource, 0.0) for n in members)
        for shape in shapes:
            assert session.room("l0", shape) == sum(places_on(n.future_idle, shape) for n in members)
