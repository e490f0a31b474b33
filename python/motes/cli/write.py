"""``motes write``: a step from a file of particles; the writing options and summary shared
with ``motes generate``.

The input is read by the converters (:mod:`motes.convert`), exactly as ``motes convert``
reads it: the same formats, the same dtype rules (:func:`motes.convert.base.check_dtype`,
:func:`motes.convert.motes_format.for_motes`) and the same errors. ``motes write`` then
writes that one step of one species from memory, with the options below.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .. import _defaults
from ..errors import UsageError
from .common import (_add_progress, _attr_arg, _bytes, _g, _key_value, _nonneg_int, _num, _out, _positive_int,
                     _progress, _rate, _sub)


@dataclass
class Input:
    """What an input file holds: its columns, and the step metadata it carries (step index,
    time and species name: None when the file does not say)."""

    columns: Dict[str, Any]
    attributes: Dict[str, Any] = field(default_factory=dict)
    time: Optional[float] = None
    step: Optional[int] = None
    species: Optional[str] = None
    units: Dict[str, str] = field(default_factory=dict)


def read_input(path: str, time_from: Optional[str] = None) -> Input:
    """The one step of one species of ``path``, read the way ``motes convert`` reads it,
    gathered in memory."""
    from .. import convert
    from ..convert import motes_format

    options = {} if time_from is None else {"time_from": time_from}
    chosen = None
    for st in convert.read(path, **options):
        for sp in st.species.values():
            if chosen is not None:
                raise UsageError(f"{path}: holds more than one step or species; motes write writes one "
                                 f"(motes convert {path} DATASET --append writes them all)")
            chosen = (st, sp)
    if chosen is None:
        raise UsageError(f"{path}: holds no particles (no step with a species)")
    st, sp = chosen
    sp = motes_format.for_motes(sp)
    return Input(motes_format.gather(sp), motes_format.step_attributes(st), st.time, st.index, sp.name,
                 dict(sp.units))


def _next_step(path: str) -> int:
    from ..convert.motes_format import next_step

    return next_step(path)


def _write(args, inp: Input, source: str) -> int:
    from ..writer import write

    cols = inp.columns
    index = dict(getattr(args, "index", None) or [])
    units = {**inp.units, **dict(getattr(args, "unit", None) or [])}
    units = {k: v for k, v in units.items() if k in cols}
    for opt, mapping in (("--index", index), ("--unit", units)):
        for name in mapping:
            if name not in cols:
                raise UsageError(f"{opt}: unknown column '{name}' (columns: {', '.join(cols)})")
    for name, kind in index.items():
        if kind not in ("auto", "none", "quantile"):
            raise UsageError(f"--index {name}={kind}: kind must be auto, none or quantile")
    # The command line wins over what the file says, which wins over the defaults.
    step = args.step if args.step is not None else inp.step if inp.step is not None else _next_step(args.dataset)
    t = args.time if args.time is not None else inp.time if inp.time is not None else 0.0
    species = args.species or inp.species or "particles"
    attributes = {**inp.attributes, **dict(getattr(args, "attr", None) or [])}
    n = len(next(iter(cols.values())))
    in_bytes = sum(v.nbytes for v in cols.values())
    t0 = time.perf_counter()
    summaries = write(args.dataset, cols, step=step, time=t, species=species, index=index, units=units,
                      attributes=attributes, leaf_size=args.leaf_size, lod_count=args.lod_count,
                      threads=args.threads, progress=_progress(args))
    seconds = time.perf_counter() - t0
    s = summaries[0] if summaries else {}
    data = s.get("data_bytes", in_bytes)
    fbytes = s.get("file_bytes", 0)
    _out(f"wrote step {step} (time {_g(t)}) of {args.dataset}, species '{species}', from {source}")
    if attributes:
        _out(f"  attributes {json.dumps(attributes)}")
    _out(f"  particles  {_num(n)} x {len(cols)} columns ({', '.join(cols)})")
    ov = f", overhead {100.0 * (fbytes - data) / data:.1f}%" if data else ""
    _out(f"  bytes      {_bytes(fbytes)} on disk ({_bytes(data)} data{ov}), "
         f"{s.get('level_count', '?')} levels, {_num(s.get('node_count', 0))} nodes")
    _out(f"  seconds    {seconds:.3f} (layout {s.get('layout_seconds', 0):.3f}, "
         f"write {s.get('write_seconds', 0):.3f})")
    _out(f"  rate       {_rate(n, seconds, 'particles')}, {_rate(in_bytes, seconds, 'B')}")
    return 0


def cmd_write(args) -> int:
    return _write(args, read_input(args.input, args.time_from), args.input)


def _add_write_options(p) -> None:
    g = p.add_argument_group("writing")
    g.add_argument("--step", type=int, default=None,
                   help="step index to write (default: the input's own, e.g. an .npz scalar 'step' or 'iteration'; "
                        "else 0 for a new dataset, else last step + 1)")
    g.add_argument("--time", type=float, default=None,
                   help="physical time of the step (default: the input's own, e.g. an .npz scalar 'time'; else 0)")
    g.add_argument("--species", default=None, help="species name (default: the input's own, else particles)")
    g.add_argument("--attr", type=_attr_arg, action="append", metavar="KEY=VALUE",
                   help="a step attribute (repeatable); VALUE is JSON when it parses (2.5, [1, 2], true), else text")
    g.add_argument("--index", type=_key_value, action="append", metavar="COL=KIND",
                   help="extra index for a column: auto, none or quantile (repeatable; auto builds a quantile "
                        "index for spatially incoherent columns)")
    g.add_argument("--unit", type=_key_value, action="append", metavar="COL=UNIT",
                   help="physical unit of a column, stored in the schema (repeatable)")
    # Defaults: None, the core's (shown from its option structs, see motes._defaults).
    g.add_argument("--leaf-size", type=_positive_int, default=None, help=_defaults.help_text("leaf_size"))
    g.add_argument("--lod-count", type=_positive_int, default=None, help=_defaults.help_text("lod_count"))
    g.add_argument("--threads", type=_nonneg_int, default=None, help=_defaults.help_text("threads"))
    _add_progress(g)


def add_parser(subs) -> None:
    p = _sub(subs, "write", "write a step from a file: .npz, .csv, .parquet, .arrow, H5Part, HDF5, openPMD",
             "Writes the particles of INPUT as one step (one species) of DATASET, creating the dataset\n"
             "when absent. INPUT is read exactly as 'motes convert' reads it, in any format it reads\n"
             "(.npz: 1-D arrays are columns, an (n, 3) 'pos' array is x, y, z, scalars are step\n"
             "attributes, 'time' the time, 'step' or 'iteration' the index; .csv with a header row;\n"
             ".parquet; .arrow/.feather; .h5part; .h5 (openPMD or plain HDF5)), and must hold one step\n"
             "of one species. Columns x, y and z are required; all columns must be numbers: booleans\n"
             "are stored as uint8, float16 as float32, integer positions as float64 (exact up to 2^53).\n"
             "A file that motes exported carries its step, time, species, attributes and units, and\n"
             "is written back as it was.",
             "  motes write run.motes step0.npz\n"
             "  motes write run.motes snap_0042.npz --time-from aexp --attr code=pysco\n"
             "  motes write run.motes electrons.parquet --step 3 --time 0.75 --species electrons\n"
             "  motes write run.motes table.csv --index energy=quantile --unit energy=keV --leaf-size 1024")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory (created when absent)")
    p.add_argument("input", metavar="INPUT", help="input file, in any format motes convert reads")
    p.add_argument("--time-from", metavar="NAME", default=None,
                   help="take the step time from this scalar of an .npz input (default: a scalar named time)")
    _add_write_options(p)
    p.set_defaults(func=cmd_write)
