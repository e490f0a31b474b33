"""pyarrow compute expressions (what a ``pyarrow.dataset`` scanner receives from pyarrow, Polars
or DuckDB) as motes ``where`` expressions with pyarrow's own semantics, which are not
always motes' exact ones:

- ``is_in`` casts its value set to the column's type first (on a float32 column 0.1 becomes
  float32(0.1), 1e300 becomes inf), then matches by value, where NaN matches NaN and 0.0
  does not match -0.0; where that cast fails it casts the column to the value set's type
  instead, which fails on the values it cannot hold (data-dependent errors);
- comparisons are IEEE (0.0 == -0.0, NaN compares false but for !=) and exact, or raise where
  a cast of the constant or of the column's values fails (a float32 column against an
  integer past 2**24, a uint64 column holding values past 2**63 against an int64 constant).

The translation asks pyarrow itself: each comparison and ``is_in`` is evaluated by pyarrow
on the column values that can tell the semantics apart (the constant's neighbours in the
column's type, -0.0, 0.0, NaN, the infinities, the type's limits). A comparison is pushed
when pyarrow's answers are the exact ones; an ``is_in`` is written as the values pyarrow
matches (``x in (...)``, ``x != x`` for NaN, ``x == 0 and 1 / x > 0`` for 0.0 alone), and
is not pushed when pyarrow matches a value that is no member of the set cast to the column's
type. Where pyarrow refuses some values (a cast error), the term is still pushed but marked
``checked``: pyarrow then applies the filter to the rows motes returns, and raises on them
as it would on the whole table."""

from __future__ import annotations

import ctypes
import math
from typing import Dict, Iterator, List, Tuple

import numpy as np

# name -> (numpy dtype, whether it holds a NaN)
ColumnTypes = Dict[str, Tuple[np.dtype, bool]]

_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
           "greater_equal": ">="}
_SWAPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_EXACT = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
          "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_MATCH_NULLS = (0, 1)  # SetLookupOptions' MATCH and SKIP: a null in the value set matches nothing here


class Untranslatable(Exception):
    pass


# --- reading an expression ------------------------------------------------------------------

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


def tree(expression):
    """pyarrow's own serialization of an expression (what pickling it writes: an Arrow IPC file
    whose schema metadata lists the nodes in prefix order and whose columns hold the literals,
    typed), as nested tuples: ("field", name), ("literal", pyarrow scalar), ("call", function,
    [arguments], options: a pyarrow struct scalar or None)."""
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
            raise Untranslatable(f"an expression node '{kind}'")
        args, options, i = [], None, i + 1
        while tokens[i] != ("end", value):
            if tokens[i][0] == "options":
                options = batch.column(int(tokens[i][1]))[0]
                i += 1
            else:
                arg, i = node(i)
                args.append(arg)
        return ("call", value, args, options), i + 1

    out, end = node(0)
    if end != len(tokens):
        raise Untranslatable("trailing expression nodes")
    return out


def fields(node) -> Iterator[str]:
    if node[0] == "field":
        yield node[1]
    elif node[0] == "call":
        for a in node[2]:
            yield from fields(a)


# --- translating -----------------------------------------------------------------------------

def translate(node, types: ColumnTypes) -> Tuple[str, bool]:
    """The motes expression selecting exactly the rows pyarrow keeps for ``node`` (where
    pyarrow answers), and whether pyarrow must still check the rows (it may refuse some)."""
    if node[0] != "call":
        raise Untranslatable("a bare field or constant")
    _, function, args, options = node
    if function in ("and_kleene", "and", "or_kleene", "or") and len(args) == 2:
        (a, ca), (b, cb) = translate(args[0], types), translate(args[1], types)
        return f"({a} {function.split('_')[0]} {b})", ca or cb
    if function == "invert" and len(args) == 1:
        a, ca = translate(args[0], types)
        return f"(not {a})", ca
    if function in _COMPARE and len(args) == 2:
        return _comparison(function, args, types)
    if function == "is_in" and len(args) == 1 and args[0][0] == "field" and options is not None:
        return _is_in(args[0][1], options, types)
    raise Untranslatable(f"the function {function}")


def _dtype(name: str, types: ColumnTypes) -> np.dtype:
    if name not in types:
        raise Untranslatable(f"no column '{name}'")
    return types[name][0]


def _number(scalar):
    """A numeric pyarrow scalar's exact value (a Python int or float)."""
    import pyarrow as pa

    if not (pa.types.is_integer(scalar.type) or pa.types.is_floating(scalar.type)) or not scalar.is_valid:
        raise Untranslatable(f"a constant of type {scalar.type}")
    v = scalar.as_py()
    return int(v) if pa.types.is_integer(scalar.type) else float(v)


def text(value) -> str:
    """A number as motes parses it back exactly (an integer by its digits)."""
    if isinstance(value, int):
        return str(value)
    return "nan" if math.isnan(value) else repr(value)


#: The members of a value set whose neighbours are probed too (spread over the set).
NEIGHBOURED = 64


def _neighbours(dtype: np.dtype, v: np.ndarray) -> np.ndarray:
    """The values of ``dtype`` next to each of ``v`` (two on each side)."""
    if dtype.kind == "f":
        down, up = np.nextafter(v, dtype.type(-np.inf)), np.nextafter(v, dtype.type(np.inf))
        return np.concatenate([down, up, np.nextafter(down, dtype.type(-np.inf)), np.nextafter(up, dtype.type(np.inf))])
    info = np.iinfo(dtype)
    out = [int(x) + d for x in v.tolist() for d in (-2, -1, 1, 2)]
    return np.array([x for x in out if info.min <= x <= info.max], dtype=dtype)


def _cast(dtype: np.dtype, values: List) -> np.ndarray:
    """``values`` (Python numbers) as ``dtype``: rounded to the nearest float (as Arrow's cast
    rounds; past the range, infinite), or for integers the integral ones in range."""
    if dtype.kind == "f":
        def rounded(v):
            try:
                return dtype.type(v)
            except OverflowError:  # an integer past float64
                return math.copysign(math.inf, v)

        with np.errstate(all="ignore"):
            return np.array([rounded(v) for v in values], dtype=dtype)
    info = np.iinfo(dtype)
    return np.array([int(v) for v in values if (isinstance(v, int) or (math.isfinite(v) and v.is_integer()))
                     and info.min <= v <= info.max], dtype=dtype)


def _specials(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        f = np.finfo(dtype)
        return np.array([0.0, -0.0, np.nan, np.inf, -np.inf, f.max, -f.max, f.smallest_subnormal,
                         -f.smallest_subnormal, 1.0, -1.0], dtype=dtype)
    info = np.iinfo(dtype)
    return np.array([0, 1, info.min, info.min + 1, info.max, info.max - 1], dtype=dtype)


def _probe(expression, name: str, values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Which of ``values`` (of the column ``name``'s dtype) pyarrow keeps for ``expression``,
    and which it refuses (a cast error: then it keeps none of a table holding them)."""
    import pyarrow as pa

    row = name + "#"

    def kept(vs: np.ndarray) -> np.ndarray:
        t = pa.table({name: pa.array(vs), row: pa.array(np.arange(len(vs)))})
        mask = np.zeros(len(vs), bool)
        mask[t.filter(expression).column(row).to_numpy()] = True
        return mask

    try:
        return kept(values), np.zeros(len(values), bool)
    except pa.ArrowException:
        pass
    try:
        kept(values[:0])
    except pa.ArrowException as e:  # refused whatever the values: pyarrow raises on its own
        raise Untranslatable(f"pyarrow refuses it: {e}") from None
    out, refused = np.zeros(len(values), bool), np.zeros(len(values), bool)
    pending = [(0, len(values))]
    while pending:  # halves what pyarrow refuses until each refused value is alone
        lo, hi = pending.pop()
        try:
            out[lo:hi] = kept(values[lo:hi])
        except pa.ArrowException:
            if hi - lo == 1:
                refused[lo] = True
            else:
                pending += [(lo, (lo + hi) // 2), ((lo + hi) // 2, hi)]
    return out, refused


def _comparison(function: str, args, types: ColumnTypes) -> Tuple[str, bool]:
    import pyarrow.compute as pc

    op = _COMPARE[function]
    left, right = args
    if left[0] == "literal" and right[0] == "field":
        left, right, op = right, left, _SWAPPED[op]
    if left[0] != "field" or right[0] != "literal":
        raise Untranslatable("a comparison that is not of a column with a constant")
    name, dtype, value = left[1], _dtype(left[1], types), _number(right[1])
    expression = pc.Expression._call(function, [pc.field(a[1]) if a[0] == "field" else pc.scalar(a[1])
                                                for a in args])
    if dtype.kind == "f":
        near = _cast(dtype, [value])
    else:
        near = _cast(dtype, [math.floor(value), math.ceil(value)] if math.isfinite(value) else [])
    near = near[near == near]
    values = np.concatenate([near, _neighbours(dtype, near), _specials(dtype)])
    kept, refused = _probe(expression, name, values)
    for v, k, r in zip(values.tolist(), kept.tolist(), refused.tolist()):
        if not r and k != _EXACT[op](v, value):
            raise Untranslatable(f"pyarrow's {function} is not exact for {v!r}")
    return f"({name} {op} {text(value)})", bool(refused.any())


def _is_in(name: str, options, types: ColumnTypes) -> Tuple[str, bool]:
    import pyarrow as pa
    import pyarrow.compute as pc

    dtype = _dtype(name, types)
    value_set = options["value_set"].values if "value_set" in options.type.names else None
    if value_set is None or not (pa.types.is_integer(value_set.type) or pa.types.is_floating(value_set.type)):
        raise Untranslatable("an is_in of no numbers")
    given = value_set.drop_null()
    nulls = "null_matching_behavior" in options.type.names and \
        options["null_matching_behavior"].as_py() not in _MATCH_NULLS
    if len(given) < len(value_set) and nulls:
        raise Untranslatable("an is_in whose nulls give null")
    # What the set cast to the column's type holds (the only values it may match, with -0.0,
    # 0.0 and NaN), and values next to some of them (which it must not match).
    members = _cast(dtype, given.to_pylist())
    members = np.unique(members[members == members])
    spread = members[np.linspace(0, len(members) - 1, min(len(members), NEIGHBOURED)).astype(int)]
    probed = np.concatenate([members, _specials(dtype), _neighbours(dtype, spread)])
    kept, refused = _probe(pc.field(name).isin(given), name, probed)
    matched = probed[kept]
    odd = matched[~np.isin(matched, members)]
    if dtype.kind == "f":
        odd = odd[(odd != 0) & (odd == odd)]  # 0.0, -0.0 and NaN match by their own rules
    if len(odd):
        raise Untranslatable(f"pyarrow's is_in matches {odd[0]!r}, which its set does not hold")
    return _membership(name, dtype, matched.tolist()), bool(refused.any())


def _membership(name: str, dtype: np.dtype, matched: List) -> str:
    """``name`` is one of ``matched`` (values of ``dtype``), telling 0.0 from -0.0 and matching NaN."""
    if dtype.kind != "f":
        listed = sorted(set(matched))
        return f"({name} in ({', '.join(map(str, listed))}))"
    listed = sorted({v for v in matched if v == v and v != 0})
    zeros = {math.copysign(1.0, v) for v in matched if v == 0}
    terms = [f"{name} in ({', '.join(map(text, listed))})"] if listed or not matched else []
    if zeros == {1.0, -1.0}:
        terms.append(f"{name} == 0")
    elif zeros:
        terms.append(f"({name} == 0 and 1 / {name} {'>' if zeros == {1.0} else '<'} 0)")
    if any(v != v for v in matched):
        terms.append(f"{name} != {name}")
    return terms[0] if len(terms) == 1 and terms[0][0] == "(" else f"({' or '.join(terms)})"
