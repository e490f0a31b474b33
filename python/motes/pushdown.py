"""Filters other tools push down, as motes ``where`` expressions: pyarrow's compute
expressions (what a ``pyarrow.dataset`` scanner receives from pyarrow, Polars or DuckDB) and
DuckDB's predicate trees (what its Arrow scan offers a source). Each translator gives the
motes expression that selects exactly the rows the tool's own evaluation would, or None
where it cannot say so: the tool then applies that filter itself. Both feed the one planner
(the core's query: tree, indexes and tails prune, the rest is evaluated exactly).

What translates: comparisons (``= != < <= > >=``) of a column with a numeric constant, ``IN``
lists of constants, ``AND``, ``OR`` and ``NOT`` of those, each with the tool's semantics
(for pyarrow, which differ from motes' exact ones, see :mod:`motes._arrow_pushdown`). What
does not: anything else (arithmetic, functions, ``IS NULL``, strings), whatever the tool
does not decide exactly as motes can say it, and, for DuckDB, a floating column that holds
NaN (DuckDB orders NaN above every number, where motes and Arrow compare it false).
"""

from __future__ import annotations

import math
import operator
from typing import List, Optional, Sequence, Tuple

import numpy as np

from . import _arrow_pushdown as _arrow
from ._arrow_pushdown import ColumnTypes, Untranslatable as _Untranslatable

__all__ = ["ColumnTypes", "arrow_filter", "arrow_filter_columns", "conjunction", "duckdb_columns", "duckdb_filter",
           "duckdb_integer_test"]

_EXACT_INT = 1 << 53


def _constant(value, dtype: np.dtype) -> str:
    """A constant as motes parses it back to the same number, for a column of ``dtype``."""
    if isinstance(value, (bool, np.bool_)):
        raise _Untranslatable("a boolean constant")
    if isinstance(value, (int, np.integer)):
        if dtype.kind == "f" and abs(int(value)) > _EXACT_INT:
            raise _Untranslatable("an integer the tool would round to a double")
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            raise _Untranslatable("a non-finite constant")
        if dtype.kind in "iu":
            if not v.is_integer() or abs(v) > _EXACT_INT:
                raise _Untranslatable("a fractional constant against integers")
            return str(int(v))
        return repr(v)
    raise _Untranslatable(f"a constant of type {type(value).__name__}")


def _column(name: str, types: ColumnTypes) -> np.dtype:
    if name not in types:
        raise _Untranslatable(f"no column '{name}'")
    return types[name][0]


# --- pyarrow compute expressions -------------------------------------------------------------

_UNREADABLE = (_Untranslatable, IndexError, KeyError, ValueError, TypeError, AttributeError, OSError, ArithmeticError,
               NotImplementedError)


def _conjuncts(tree):
    if tree[0] == "call" and tree[1] in ("and_kleene", "and") and len(tree[2]) == 2:
        for a in tree[2]:
            yield from _conjuncts(a)
    else:
        yield tree


def arrow_filter(expression, types: ColumnTypes) -> Tuple[Optional[str], bool]:
    """What of a pyarrow compute ``expression`` motes answers on these columns: the motes
    expression of its translatable conjuncts (None when none is), and whether that is the
    whole of it (else the caller applies the expression itself to the rows motes selects,
    which are a superset of what it keeps: the conjuncts it could not translate, and those
    pyarrow may refuse for some values, which it must then see)."""
    if expression is None:
        return None, True
    try:
        tree = _arrow.tree(expression)
    except _UNREADABLE:
        return None, False
    pushed, exact = [], True
    for term in _conjuncts(tree):
        try:
            text, checked = _arrow.translate(term, types)
        except _UNREADABLE:
            exact = False
            continue
        pushed.append(text)
        exact = exact and not checked
    return conjunction(pushed), exact


def arrow_filter_columns(expression) -> Optional[List[str]]:
    """The columns a pyarrow expression reads, or None when its tree cannot be read."""
    try:
        return sorted(set(_arrow.fields(_arrow.tree(expression))))
    except _UNREADABLE:
        return None


# --- DuckDB predicate trees ------------------------------------------------------------------

_DUCK_COMPARE = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_PY_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
               ">=": operator.ge}
_DUCK_NUMERIC = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
                 "FLOAT", "DOUBLE"}


def _duck_column(node, types: ColumnTypes) -> str:
    parts = getattr(node, "parts", None)
    if type(node).__name__ != "Col" or not parts or len(parts) != 1:
        raise _Untranslatable("not a top-level column")
    dtype = _column(parts[0], types)
    if dtype.kind == "f" and types[parts[0]][1]:
        raise _Untranslatable("a floating column holding NaN")
    return parts[0]


def _duck_constant(node, dtype: np.dtype) -> str:
    from duckdb._sources.nodes import exact_value

    if type(node).__name__ != "Lit" or node.type not in _DUCK_NUMERIC or not exact_value(node):
        raise _Untranslatable("not a numeric constant of the column's type")
    return _constant(node.value, dtype)


def _from_duckdb(node, types: ColumnTypes) -> str:
    kind = type(node).__name__
    if kind == "Binary":
        op = node.op.upper()
        if op in ("AND", "OR"):
            return f"({_from_duckdb(node.left, types)} {op.lower()} {_from_duckdb(node.right, types)})"
        if op in _DUCK_COMPARE:
            name = _duck_column(node.left, types)
            return f"({name} {_DUCK_COMPARE[op]} {_duck_constant(node.right, types[name][0])})"
    if kind == "Unary" and node.op.upper() == "NOT":
        return f"(not {_from_duckdb(node.operand, types)})"
    if kind == "In":
        name = _duck_column(node.operand, types)
        if not node.values:
            raise _Untranslatable("an empty IN list")
        return f"({name} in ({', '.join(_duck_constant(v, types[name][0]) for v in node.values)}))"
    raise _Untranslatable(f"a {kind} node")


def duckdb_filter(predicate, types: ColumnTypes) -> Optional[str]:
    """The motes expression selecting exactly the rows where DuckDB finds ``predicate`` (a
    node of ``duckdb._sources.nodes``) true, or None."""
    try:
        return _from_duckdb(predicate, types)
    except _Untranslatable:
        return None


def duckdb_columns(predicate) -> set:
    """The column names a DuckDB predicate tree reads."""
    out, pending = set(), [predicate]
    while pending:
        node = pending.pop()
        if type(node).__name__ == "Col":
            out.add(node.parts[0])
        pending.extend(node._children())
    return out


def duckdb_integer_test(predicate, name: str):
    """A predicate over one integer column ``name`` (a dataset's ``step`` column, which no
    file stores) as a Python test of its value, or None when it is not one."""
    def value(node) -> int:
        if type(node).__name__ != "Lit" or not isinstance(node.value, int) or isinstance(node.value, bool):
            raise _Untranslatable("not an integer constant")
        return node.value

    def column(node) -> None:
        if type(node).__name__ != "Col" or tuple(node.parts) != (name,):
            raise _Untranslatable(f"not the column {name}")

    def test(node):
        kind = type(node).__name__
        if kind == "Binary":
            op = node.op.upper()
            if op in ("AND", "OR"):
                a, b = test(node.left), test(node.right)
                return (lambda v: a(v) and b(v)) if op == "AND" else (lambda v: a(v) or b(v))
            if op in _DUCK_COMPARE:
                column(node.left)
                c, f = value(node.right), _PY_COMPARE[_DUCK_COMPARE[op]]
                return lambda v: f(v, c)
        if kind == "Unary" and node.op.upper() == "NOT":
            a = test(node.operand)
            return lambda v: not a(v)
        if kind == "In":
            column(node.operand)
            values = {value(v) for v in node.values}
            return lambda v: v in values
        raise _Untranslatable(f"a {kind} node")

    try:
        return test(predicate)
    except _Untranslatable:
        return None


def conjunction(terms: Sequence[str]) -> Optional[str]:
    """Terms joined by ``and`` (None for none)."""
    return " and ".join(terms) if terms else None
