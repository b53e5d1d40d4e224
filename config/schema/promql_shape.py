"""What a PromQL expression returns, judged from its shape alone (no data): whether it can
return more than one series, and whether an operation in it can return nothing because one side
has no series. The autoscaling checks read these of a wake-up query."""

from __future__ import annotations

from typing import Any

import promql_parser

# Aggregations that return one series when they group by nothing; functions that keep their
# argument's series.
_ONE_SERIES_AGGREGATIONS = frozenset({"sum", "avg", "min", "max", "count", "group", "stddev", "stdvar", "quantile"})
_SERIES_PRESERVING = frozenset({"abs", "ceil", "floor", "round", "clamp", "clamp_min", "clamp_max", "sqrt", "sgn"})


def returns_one_series(node: Any) -> bool:
    """Whether a PromQL expression returns at most one series whatever the data: an aggregation
    without grouping (or `topk`/`bottomk` of 1), a number, `scalar()`/`vector()`/`time()`,
    `absent()`, a quantile over buckets grouped by `le` alone, a range function over a subquery
    of one series, and what combines only those."""
    if isinstance(node, promql_parser.NumberLiteral):
        return True
    if isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        return returns_one_series(node.expr)
    if isinstance(node, promql_parser.AggregateExpr):
        if _grouped_by(node) != ():
            return False
        op, param = str(node.op), node.param
        top_one = op in ("topk", "bottomk") and isinstance(param, promql_parser.NumberLiteral) and param.val == 1
        return op in _ONE_SERIES_AGGREGATIONS or top_one
    if isinstance(node, promql_parser.Call):
        name, args = node.func.name, node.args
        if name in ("scalar", "vector", "time", "absent", "absent_over_time"):
            return True
        if name == "histogram_quantile" and len(args) == 2:
            return _grouped_by(_unwrapped(args[1])) == ("le",)
        if name in _SERIES_PRESERVING or name.endswith("_over_time"):
            return bool(args) and returns_one_series(args[-1] if name.endswith("_over_time") else args[0])
        return False
    if isinstance(node, promql_parser.BinaryExpr):
        return returns_one_series(node.lhs) and returns_one_series(node.rhs)
    return False


def _unwrapped(node: Any) -> Any:
    return _unwrapped(node.expr) if isinstance(node, promql_parser.ParenExpr) else node


def _grouped_by(node: Any) -> tuple[str, ...] | None:
    """The labels an aggregation groups by (`()` for none), None for `without` or no aggregation."""
    if not isinstance(node, promql_parser.AggregateExpr):
        return None
    modifier = node.modifier
    if modifier is None:
        return ()
    if modifier.type == promql_parser.AggModifierType.Without:
        return None
    return tuple(modifier.labels)


# Operations that keep a side's series when the other has none.
_SET_OPERATORS = frozenset({"or", "unless"})


def can_be_empty(node: Any) -> bool:
    """Whether the expression can return no series at all: a number, `vector()`, `time()` and
    `scalar()` never do, nor `x or <one of those>`; every selection can."""
    if isinstance(node, promql_parser.NumberLiteral):
        return False
    if isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr)):
        return can_be_empty(node.expr)
    if isinstance(node, promql_parser.Call) and node.func.name in ("vector", "time", "scalar"):
        return False
    if isinstance(node, promql_parser.BinaryExpr):
        if str(node.op) == "or":
            return can_be_empty(node.lhs) and can_be_empty(node.rhs)
        return can_be_empty(node.lhs) or can_be_empty(node.rhs)
    return True


def empty_operand(node: Any) -> bool:
    """Whether an operation between two series (`a + b`, `a / b`) is in the expression with a side
    that can be empty: the whole then returns nothing although the other side has a value."""
    found = False

    def visit(child: Any) -> None:
        nonlocal found
        if not isinstance(child, promql_parser.BinaryExpr) or str(child.op) in _SET_OPERATORS | {"and"}:
            return
        numbers = (promql_parser.NumberLiteral, promql_parser.StringLiteral)
        if isinstance(child.lhs, numbers) or isinstance(child.rhs, numbers):
            return
        found = found or can_be_empty(child.lhs) or can_be_empty(child.rhs)

    promql_parser.walk(node, visit)
    return found
