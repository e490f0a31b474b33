"""``motes write``: a step from a file of particles (the writing options and summary are
:mod:`.writing`'s, shared with ``motes generate``).

The input is read by the converters (:mod:`motes.convert`), exactly as ``motes convert``
reads it: the same formats, the same dtype rules (:func:`motes.convert.base.check_dtype`,
:func:`motes.convert.motes_format.for_motes`) and the same errors. ``motes write`` then
writes that one step of one species from memory, with the options below.
"""

from __future__ import annotations

from typing import Optional

from ..errors import UsageError
from .options import add_command, add_option
from .writing import Input, add_write_options, write_step


def read_input(path: str, time_from: Optional[str] = None) -> Input:
    """The one step of one species of ``path``, read the way ``motes convert`` reads it,
    gathered in memory, with the record of the file it came from (as ``motes convert``
    records it: :mod:`motes.convert.provenance`)."""
    import inspect

    from .. import convert
    from ..convert import motes_format, provenance

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
    attributes = motes_format.step_attributes(st)
    record = provenance.Recorder().record(st, [sp.name])
    if record is not None:
        attributes[provenance.KEY] = record
    reader = convert.FORMATS[convert.detect_format(path, False)].load().read
    sp = motes_format.for_motes(sp)
    return Input(motes_format.gather(sp), attributes, st.time, st.index, sp.name, dict(sp.units),
                 time_missing=st.time_missing, time_from="time_from" in inspect.signature(reader).parameters)


def cmd_write(args) -> int:
    from ..convert import provenance

    inp = read_input(args.input, args.time_from)
    provenance.check(args.dataset, inp.attributes.get(provenance.KEY), args.input,
                     allow_duplicate=args.allow_duplicate)
    return write_step(args, inp, args.input)


DESCRIPTION = """\
Writes the particles of INPUT as one step (one species) of DATASET, creating the dataset
when absent. INPUT is read exactly as 'motes convert' reads it, in any format it reads
(.npz: 1-D arrays are columns, an (n, 3) 'pos' array is x, y, z, scalars are step
attributes, 'time' the time, 'step' or 'iteration' the index; .csv with a header row;
.parquet; .arrow/.feather; .h5part; .h5 (openPMD or plain HDF5)), and must hold one step
of one species. Columns x, y and z are required; all columns must be numbers: booleans
are stored as uint8, float16 as float32, integer positions as float64 (exact up to 2^53).
A file that motes exported carries its step, time, species, attributes and units, and
is written back as it was."""

EXAMPLES = """\
  motes write run.motes step0.npz
  motes write run.motes snap_0042.npz --time-from aexp --attr code=pysco
  motes write run.motes electrons.parquet --step 3 --time 0.75 --species electrons
  motes write run.motes table.csv --index energy=quantile --unit energy=keV --leaf-size 1024"""


def add_parser(subs) -> None:
    p = add_command(subs, "write", "write a step from a file: .npz, .csv, .parquet, .arrow, H5Part, HDF5, openPMD",
                    DESCRIPTION, EXAMPLES)
    add_option(p, "dataset", help="dataset directory (created when absent)")
    p.add_argument("input", metavar="INPUT", help="input file, in any format motes convert reads")
    add_option(p, "time_from")
    add_write_options(p)
    add_option(p, "allow_duplicate")
    p.set_defaults(func=cmd_write)
