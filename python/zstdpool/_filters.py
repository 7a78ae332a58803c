"""Filters as pyarrow spells them, made into what the dataset scanner evaluates.

``filters`` in ``pyarrow.parquet.read_table`` is a list of ``(column, op, value)`` tuples (their
conjunction) or a list of such lists (the disjunction of their conjunctions), with the
operators ``=``, ``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=``, ``in`` and ``not in``; or a
``pyarrow.compute.Expression``. The tuple forms become the scanner's own nested tuples, which
it evaluates in Rust and prunes partitions and row groups by. An expression cannot be looked
into from Python, so it is kept as it is: pyarrow prunes the files by their partitions with it,
and applies it to the rows read (see ``zstdpool.dataset.Dataset``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

_COMPARISONS = ("=", "==", "!=", "<", ">", "<=", ">=")


@dataclass(frozen=True)
class Filter:
    """A filter made ready for the scanner: ``tree`` in its nested tuples, or ``expression``
    (a pyarrow Expression) where it cannot be made into them."""

    tree: tuple[Any, ...] | None = None
    expression: pc.Expression | None = None


def _value(value: Any) -> pa.Array:
    import pyarrow as pa

    if isinstance(value, pa.Scalar):
        return pa.array([value.as_py()], type=value.type)
    return pa.array([value])


def _values(column: str, op: str, value: Any) -> pa.Array:
    import pyarrow as pa

    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, set, frozenset)):
        if isinstance(value, (pa.Array, pa.ChunkedArray)):
            return pa.array(value)
        raise TypeError(
            f"filters: the value of ({column!r}, {op!r}, ...) must be a collection of values, "
            f"not '{type(value).__name__}'"
        )
    items = [v.as_py() if isinstance(v, pa.Scalar) else v for v in value]
    return pa.array(items)


def _predicate(item: Any) -> tuple[Any, ...]:
    if not isinstance(item, (tuple, list)) or len(item) != 3:
        raise TypeError(
            f"filters: each predicate must be a (column, op, value) tuple, not {item!r}"
        )
    column, op, value = item
    if not isinstance(column, str):
        raise TypeError(f"filters: the column of {item!r} must be a name (str)")
    if not isinstance(op, str):
        raise TypeError(f"filters: the operator of {item!r} must be a str")
    op = op.lower()
    if op in _COMPARISONS:
        return ("cmp", column, op, _value(value))
    if op == "in":
        return ("in", column, _values(column, op, value))
    if op == "not in":
        return ("not", ("in", column, _values(column, op, value)))
    raise ValueError(f'"{item[1]}" is not a valid operator in predicates.')


def normalize(filters: Any) -> Filter | None:
    """``filters`` (pyarrow's forms) made ready for the scanner; None for no filter."""
    if filters is None:
        return None
    import pyarrow.compute as pc

    if isinstance(filters, pc.Expression):
        return Filter(expression=filters)
    if not isinstance(filters, (list, tuple)) or not filters:
        raise ValueError(
            "filters must be a pyarrow Expression, a non-empty list of (column, op, value) "
            "tuples, or a list of such lists"
        )
    if (
        isinstance(filters[0], (list, tuple))
        and filters[0]
        and isinstance(filters[0][0], (list, tuple))
    ):
        disjuncts = []
        for conjunction in filters:
            if not isinstance(conjunction, (list, tuple)) or not conjunction:
                raise ValueError(
                    f"filters: each conjunction must be a non-empty list, not {conjunction!r}"
                )
            disjuncts.append(("and", [_predicate(p) for p in conjunction]))
        return Filter(tree=("or", disjuncts))
    return Filter(tree=("and", [_predicate(p) for p in filters]))


def to_expression(filters: Any) -> pc.Expression | None:
    """``filters`` as one pyarrow Expression (what the readers of single files and
    in-memory data apply)."""
    if filters is None:
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if isinstance(filters, pc.Expression):
        return filters

    normalize(filters)  # the same checks and messages as the scanner's
    return pq.filters_to_expression(filters)
