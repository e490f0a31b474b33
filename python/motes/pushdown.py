"""Filters other tools push down, as motes ``where`` expressions: pyarrow's compute
expressions (what a ``pyarrow.dataset`` scanner receives from pyarrow, Polars or DuckDB) and
DuckDB's predicate trees (what its Arrow scan offers a source). Each translator gives the
motes expression that selects exactly the rows the tool's own evaluation would, or None
where it cannot say so: the tool then applies that filter itself. Both feed the one planner
(the core's query: tree, indexes and tails prune, the rest is evaluated exactly).

What translates: comparisons (``= != < <= > >=``) of a column with a numeric constant, ``IN``
lists of constants, ``AND``, ``OR`` and ``NOT`` of those. What does not: anything else
(arithmetic, functions, ``IS NULL``, strings), an integer column against a fractional
constant, an integer constant beyond 2**53 against a floating column (the tools round it
to a double), a non-finite constant, and, for DuckDB, a floating column that holds NaN
(DuckDB orders NaN above every number, where motes and Arrow compare it false).
"""

from __future__ import annotations

import ctypes
import math
import operator
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["ColumnTypes", "arrow_filter", "arrow_filter_columns", "conjunction", "duckdb_columns", "duckdb_filter",
           "duckdb_integer_test"]

# name -> (numpy dtype, whether it holds a NaN)
ColumnTypes = Dict[str, Tuple[np.dtype, bool]]

_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_SWAPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_EXACT_INT = 1 << 53


class _Untranslatable(Exception):
    pass


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

class _ArrowSchemaC(ctypes.Structure):  # the Arrow C data interface's ArrowSchema
    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


def _ordered_metadata(schema) -> List[Tuple[str, str]]:
    """A schema's key-value metadata in order, repeated keys kept (pyarrow's dict would merge
    them), read through the C data interface."""
    c = _ArrowSchemaC()
    schema._export_to_c(ctypes.addressof(c))
    try:
        out = []
        if c.metadata:
            n = ctypes.c_int32.from_address(c.metadata).value
            at = c.metadata + 4
            for _ in range(n):
                pair = []
                for _ in range(2):
                    size = ctypes.c_int32.from_address(at).value
                    pair.append(ctypes.string_at(at + 4, size).decode())
                    at += 4 + size
                out.append((pair[0], pair[1]))
        return out
    finally:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(c.release)(ctypes.addressof(c))


def _arrow_tree(expression):
    """pyarrow's own serialization of an expression (what pickling it writes: an Arrow IPC file
    whose schema metadata lists the nodes in prefix order and whose columns hold the literals,
    typed), as nested tuples: ("field", name), ("literal", pyarrow scalar), ("call", function,
    [arguments], options or None)."""
    import pyarrow as pa

    reducer = expression.__reduce__()
    buffer = reducer[1][0]
    reader = pa.ipc.open_file(buffer)
    batch = reader.get_batch(0) if reader.num_record_batches else None
    tokens = _ordered_metadata(reader.schema)

    def node(i: int):
        kind, value = tokens[i]
        if kind == "field_ref":
            return ("field", value), i + 1
        if kind == "literal":
            return ("literal", batch.column(int(value))[0]), i + 1
        if kind != "call":
            raise _Untranslatable(f"an expression node '{kind}'")
        args, options, i = [], None, i + 1
        while tokens[i] != ("end", value):
            if tokens[i][0] == "options":
                options = batch.column(int(tokens[i][1]))[0].as_py()
                i += 1
            else:
                arg, i = node(i)
                args.append(arg)
        return ("call", value, args, options), i + 1

    tree, end = node(0)
    if end != len(tokens):
        raise _Untranslatable("trailing expression nodes")
    return tree


def _fields_of(tree) -> Iterator[str]:
    if tree[0] == "field":
        yield tree[1]
    elif tree[0] == "call":
        for a in tree[2]:
            yield from _fields_of(a)


def _from_arrow(tree, types: ColumnTypes) -> str:
    if tree[0] != "call":
        raise _Untranslatable("a bare field or constant")
    _, function, args, options = tree
    if function in ("and_kleene", "and") and len(args) == 2:
        return f"({_from_arrow(args[0], types)} and {_from_arrow(args[1], types)})"
    if function in ("or_kleene", "or") and len(args) == 2:
        return f"({_from_arrow(args[0], types)} or {_from_arrow(args[1], types)})"
    if function == "invert" and len(args) == 1:
        return f"(not {_from_arrow(args[0], types)})"
    if function in _COMPARE and len(args) == 2:
        op = _COMPARE[function]
        left, right = args
        if left[0] == "literal" and right[0] == "field":
            left, right, op = right, left, _SWAPPED[op]
        if left[0] != "field" or right[0] != "literal":
            raise _Untranslatable("a comparison that is not of a column with a constant")
        dtype = _column(left[1], types)
        return f"({left[1]} {op} {_constant(right[1].as_py(), dtype)})"
    if function == "is_in" and len(args) == 1 and args[0][0] == "field" and options:
        dtype = _column(args[0][1], types)
        values = [v for v in options.get("value_set") or [] if v is not None]
        if not values:
            raise _Untranslatable("an empty IN list")
        return f"({args[0][1]} in ({', '.join(_constant(v, dtype) for v in values)}))"
    raise _Untranslatable(f"the function {function}")


_UNREADABLE = (_Untranslatable, IndexError, KeyError, ValueError, TypeError, AttributeError, OSError)


def _conjuncts(tree) -> Iterator:
    if tree[0] == "call" and tree[1] in ("and_kleene", "and") and len(tree[2]) == 2:
        for a in tree[2]:
            yield from _conjuncts(a)
    else:
        yield tree


def arrow_filter(expression, types: ColumnTypes) -> Tuple[Optional[str], bool]:
    """What of a pyarrow compute ``expression`` motes answers on these columns: the motes
    expression of its translatable conjuncts (None when none is), and whether that is the
    whole of it (else the caller applies the expression itself to the rows motes selects,
    which are a superset of what it keeps)."""
    if expression is None:
        return None, True
    try:
        tree = _arrow_tree(expression)
    except _UNREADABLE:
        return None, False
    pushed, exact = [], True
    for term in _conjuncts(tree):
        try:
            pushed.append(_from_arrow(term, types))
        except _UNREADABLE:
            exact = False
    return conjunction(pushed), exact


def arrow_filter_columns(expression) -> Optional[List[str]]:
    """The columns a pyarrow expression reads, or None when its tree cannot be read."""
    try:
        return sorted(set(_fields_of(_arrow_tree(expression))))
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
