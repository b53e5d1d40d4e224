"""The what-if's prediction, shared by `whatif`, `explain` and `diff --from`: the cluster read
once (live, or a recorded `List`), then answered by the engine `--engine` names."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.exit import UsageError
from live.cluster_state import DUMP_COMMAND, ClusterState, read_cluster, read_file

FROM_HELP = f"read the cluster from this JSON or YAML List instead of the API server; write it with `{DUMP_COMMAND}`"


def cluster_state(args: argparse.Namespace, context: str | None) -> ClusterState:
    if args.from_file:
        return read_file(Path(args.from_file))
    return read_cluster(args.kubeconfig, args.context or context)


def predict_for(args: argparse.Namespace, result: Any) -> Any:
    """The prediction by the engine `--engine` names (`auto`: Volcano's own code where it is built,
    else the model, saying why on standard error); with pools, models
    waiting on an autoscaled pool are told apart by the same engine (`whatif.pool_growth`), and a
    model whose weight claim is missing waits (`whatif.claims`)."""
    return predict_on(args, result, cluster_state(args, result.spec.config.cluster.context))


def predict_on(args: argparse.Namespace, result: Any, state: ClusterState) -> Any:
    """`predict_for` on a cluster state already read (`whatif --lose` answers twice: as it is and
    after the loss)."""
    from whatif.claims import with_missing_claims
    from whatif.pool_growth import with_pool_growth

    predictor, prediction = _engine_prediction(args, state, result)
    if result.spec.pools:
        prediction = with_pool_growth(prediction, state, result.spec, result.rendered, predictor)
    return with_missing_claims(prediction, state, result.spec)


def predict_upgrade(args: argparse.Namespace, result: Any) -> Any:
    """`whatif --upgrade`: the release the cluster runs and the target, each answering with its own
    scheduling code (`whatif.volcano.upgrade`). Only Volcano's code can: `--engine model` is bad input,
    as is a release the project has no build of."""
    from whatif.volcano.releases import UpgradeError, parse_upgrade
    from whatif.volcano.upgrade import compare

    if args.engine == "model":
        raise UsageError(
            "--upgrade compares two Volcano releases' own scheduling code; the model follows one release: "
            "leave out `--engine model`"
        )
    if args.lose:
        raise UsageError("--upgrade and --lose are separate questions: ask one at a time")
    state = cluster_state(args, result.spec.config.cluster.context)
    try:
        upgrade = parse_upgrade(args.upgrade, state)
    except UpgradeError as why:
        raise UsageError(str(why)) from why
    running, target = (_release_prediction(result, state, release) for release in (upgrade.running, upgrade.target))
    return compare(upgrade, running, target, result.spec)


def _release_prediction(result: Any, state: ClusterState, release: str) -> Any:
    from functools import partial

    from whatif.claims import with_missing_claims
    from whatif.pool_growth import with_pool_growth
    from whatif.volcano.build import EngineUnavailableError, binary_path, ensure_built
    from whatif.volcano.predict import predict_with_volcano

    try:
        if not binary_path(release).exists():
            print(
                f"building Volcano {release}'s scheduling code (volcano-session) from its Go module before answering: "
                "a few minutes the first time, then cached (`make volcano-releases` builds every release ahead)",
                file=sys.stderr,
                flush=True,
            )
        ensure_built(release=release)
    except EngineUnavailableError as why:
        raise UsageError(f"--upgrade needs Volcano {release}'s scheduling code: {why}") from why
    predictor = partial(predict_with_volcano, release=release)
    prediction = predictor(state, result.spec, result.rendered)
    if result.spec.pools:
        prediction = with_pool_growth(prediction, state, result.spec, result.rendered, predictor)
    return with_missing_claims(prediction, state, result.spec)


def predict_loss(args: argparse.Namespace, result: Any) -> Any:
    """`whatif --lose`: the same engine on the cluster as it is and after the loss, compared per
    model and per tenant (`whatif.loss_report`); where LeaderWorkerSet groups are made again, also
    with them back at once, since how soon LWS makes them decides what runs first. A `--lose`
    naming nothing the cluster has is bad input (exit 2)."""
    from dataclasses import replace

    from whatif.loss import LossError, after_loss, parse_loss
    from whatif.loss_report import compare

    try:
        losses = [parse_loss(text) for text in args.lose]
        state = cluster_state(args, result.spec.config.cluster.context)
        lost_state, lost = after_loss(state, result.spec, result.rendered, losses)
    except LossError as why:
        raise UsageError(str(why)) from why
    before = predict_on(args, result, state)
    after = predict_on(args, result, lost_state)
    at_once = None
    if lost_state.restarting_groups:
        at_once = predict_on(args, result, replace(lost_state, restarting_groups=set()))
    return compare(before, after, lost, result.spec, at_once)


def _engine_prediction(args: argparse.Namespace, state: ClusterState, result: Any) -> tuple[Any, Any]:
    from whatif.predict import predict
    from whatif.volcano.build import EngineUnavailableError

    if args.engine != "model":
        try:
            _find_engine(args.engine)
        except EngineUnavailableError as why:
            if args.engine == "volcano":
                raise UsageError(f"--engine volcano: {why}") from why
            print(f"note: the model answers: {why}", file=sys.stderr)
        else:
            from whatif.volcano.predict import predict_with_volcano
            from whatif.volcano.runner import EngineError

            try:
                return predict_with_volcano, predict_with_volcano(state, result.spec, result.rendered)
            except EngineError as failed:
                if args.engine == "volcano":
                    raise
                print(f"note: the model answers: {failed}", file=sys.stderr)
    return predict, predict(state, result.spec, result.rendered)


def _find_engine(engine: str) -> None:
    """The built engine. `auto` never builds inside a call (a cold build is minutes): it says how to
    build and lets the model answer; `volcano` builds, saying so first."""
    from whatif.volcano.build import EngineUnavailableError, binary_path, ensure_built, go_available

    if binary_path().exists() or not go_available():
        ensure_built()  # found, or the error that says Go is missing
        return
    if engine == "auto":
        raise EngineUnavailableError(
            "Volcano's scheduling code is not built here; `make volcano-session` builds it from its Go module "
            "(a few minutes the first time, then cached), or `--engine volcano` builds it before answering"
        )
    print(
        "building Volcano's scheduling code (volcano-session) from its Go module before answering: "
        "a few minutes the first time, then cached",
        file=sys.stderr,
        flush=True,
    )
    ensure_built()


def engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=("auto", "volcano", "model"),
        default="auto",
        help="who answers: `volcano`, Volcano's own scheduling code (built from its Go module first if "
        "needed); `model`, the project's model of it; `auto` (default) Volcano's code where it is built "
        "(`make volcano-session`), else the model",
    )


def upgrade_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--upgrade",
        metavar="volcano=RELEASE",
        help="answer with the scheduling code of the Volcano release the cluster runs (its vc-scheduler image tag) "
        "and of RELEASE, and say which verdicts change and the upstream changes that can cause it; "
        "`volcano=<running>..<target>` names the running release too. Exit 0 when nothing changes, 1 otherwise",
    )


def lose_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lose",
        action="append",
        default=[],
        metavar="WHAT",
        help="answer for the cluster after losing hardware, as its controllers leave it: `node=<name>[,<name>...]`, "
        "`domain=<name>` (a domain of the stack's topology or a HyperNode) or `gpus=<N>@<node or pool>` (a pool's "
        "one per node); repeat to lose several at once. Exit 0 when every model still runs or is placed again "
        "without evicting anyone and every guarantee holds, 1 otherwise",
    )
