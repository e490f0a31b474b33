"""``motes convert``: between motes and openPMD, H5Part, HDF5, VTKHDF, Parquet, Arrow, CSV, NPZ."""

from __future__ import annotations

import time

from ..errors import UsageError
from .common import show_progress
from .options import OPTIONS, add_command, add_option, add_selection, key_value, positive_int
from .text import out


def cmd_convert(args) -> int:
    from .. import convert as conv

    read_options: dict = {}
    if args.where or args.box or args.quality is not None or args.fraction is not None or args.columns:
        src_fmt = args.src_format or conv.detect_format(args.src, False)
        if src_fmt != "motes":
            raise UsageError("--where, --box, --quality, --fraction and --columns select from a motes dataset; "
                             f"the source is {src_fmt}")
        read_options = {"where": args.where, "box": args.box,
                        "quality": args.quality, "fraction": args.fraction,
                        "columns": args.columns.split(",") if args.columns else None}
    if args.group:
        read_options["group"] = args.group
    if args.map:
        read_options["columns"] = dict(args.map)
    if args.time_from:
        read_options["time_from"] = args.time_from
    if args.axes:
        src_fmt = args.src_format or conv.detect_format(args.src, False)
        if src_fmt != "openpmd":
            raise UsageError(f"--axes places the position components of an openPMD source; the source is {src_fmt}")
        read_options["axes"] = args.axes.split(",")
    write_options: dict = {}
    if args.h5_compression:
        dst_fmt = args.dst_format or conv.detect_format(args.dst, True)
        if dst_fmt not in ("h5part", "vtkhdf"):
            raise UsageError(f"--h5-compression applies to H5Part and VTKHDF exports; the destination is {dst_fmt}")
        write_options["compression"] = args.h5_compression
    if args.fields is not None:
        dst_fmt = args.dst_format or conv.detect_format(args.dst, True)
        if dst_fmt != "vtkhdf":
            raise UsageError(f"--fields applies to VTKHDF exports (other formats write the fields with the "
                             f"particles); the destination is {dst_fmt}")
        write_options["fields"] = True if args.fields is True else _names(args.fields)
    t0 = time.perf_counter()
    conv.convert(args.src, args.dst, src_format=args.src_format, dst_format=args.dst_format,
                 step=args.step, steps=args.steps, species=args.species, chunk_rows=args.chunk_rows, overwrite=args.overwrite,
                 append=args.append, as_step=args.as_step, time=args.time,
                 attributes=dict(args.attr) if args.attr else None, progress=show_progress(args),
                 read_options=read_options, write_options=write_options, allow_duplicate=args.allow_duplicate)
    verb = "appended" if args.append else "converted"
    out(f"{verb} {args.src} -> {args.dst} in {time.perf_counter() - t0:.2f} s")
    return 0


def _names(text: str) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("--fields NAMES needs at least one field name (or --fields alone for every field)")
    return names


DESCRIPTION = """\
Converts SRC into DST, streaming in chunks of --chunk-rows rows (bounded memory). Formats
come from the names (.motes, .h5part, .vtkhdf, .parquet, .arrow/.feather, .csv, .npz; a
path with %T is a file-based openPMD series) or, for existing .h5 files, from their
content (openPMD, H5Part or plain HDF5); --from/--to choose explicitly. DST appears only
once complete: a failed conversion leaves nothing. From a motes dataset, --where, --box,
--quality and --columns export a query result or a preview."""

EXAMPLES = """\
  motes convert run_%T.h5 run.motes                     # openPMD series -> motes
  motes convert sim.h5part run.motes
  motes convert run.motes out.h5 --to openpmd           # openPMD with particle patches
  motes convert run.motes preview.vtkhdf --fraction 0.01 # a 1% preview for ParaView
  motes convert run.motes fields.vtkhdf --fields        # the grid fields, as a VTKHDF image
  motes convert run.motes hot.parquet --step 10 --where 'energy > 1.3'
  motes convert sim.h5part every10.motes --steps 0:100:10  # steps as 'motes query --steps' takes them
  motes convert dump.h5 run.motes --from hdf5 --group /particles --map x=px --map y=py --map z=pz
  motes convert 'snap_*.npz' run.motes                   # a time series, one file per step
  motes convert snap_%T.npz run.motes --attr code=pysco  # step index from the file name
  motes convert snap_0100.npz run.motes --append --as-step 100 --time 1.5"""


def add_parser(subs) -> None:
    p = add_command(subs, "convert", "convert between motes and openPMD, H5Part, HDF5, VTKHDF, Parquet, Arrow, CSV, NPZ",
                    DESCRIPTION, EXAMPLES)
    p.add_argument("src", metavar="SRC",
                   help="source file, dataset, openPMD series (data%%T.h5), or one file per step: a glob "
                        "('snap_*.npz', quoted) or a %%T pattern (snap_%%T.npz: %%T is the step index)")
    p.add_argument("dst", metavar="DST", help="destination (must not exist unless --overwrite)")
    p.add_argument("--from", dest="src_format", default=None, metavar="FORMAT",
                   help="source format: motes, openpmd, h5part, hdf5, parquet, arrow, csv, npz")
    p.add_argument("--to", dest="dst_format", default=None, metavar="FORMAT",
                   help="destination format: motes, openpmd, h5part, vtkhdf, parquet, arrow, csv, npz")
    add_option(p, "step", help="keep this step of SRC (one step; several: --steps)")
    add_option(p, "steps", help="keep these steps of SRC: " + OPTIONS["steps"].settings["help"])
    add_option(p, "species", help="keep this species", repeatable=True)
    g = add_selection(p, title="selection from a motes source",
                      note="A query result or a preview of each step of a motes SRC.",
                      previews=False, threads=False, one_step=False)
    add_option(g, "columns", help="columns to export (default: all)")
    p.add_argument("--group", default=None, help="plain HDF5 source: the group holding the datasets")
    p.add_argument("--map", type=key_value, action="append", metavar="COL=DATASET",
                   help="plain HDF5 source: motes column from a dataset of the group (repeatable)")
    p.add_argument("--chunk-rows", type=positive_int, default=1 << 20, help="rows per chunk")
    p.add_argument("--fields", nargs="?", const=True, default=None, metavar="NAMES",
                   help="VTKHDF destination: write the steps' grid fields (uniform Cartesian ones) as an image "
                        "instead of the particles: every field, or the NAMES given (comma-separated)")
    p.add_argument("--h5-compression", choices=["none", "gzip", "zstd", "blosc2"], default=None,
                   help="H5Part and VTKHDF exports: an HDF5 filter on chunked datasets (gzip: every HDF5 "
                        "reads it; zstd, blosc2: readers need hdf5plugin); default none")
    p.add_argument("--overwrite", action="store_true",
                   help="replace DST if it exists and is output of the same kind (a motes dataset, an HDF5 file, ...)")
    g = p.add_argument_group("building a time series")
    g.add_argument("--append", action="store_true",
                   help="add the steps of SRC to the motes dataset DST (created when absent); each step is "
                        "published whole; a step DST has already is an error, and so is a file DST holds a step "
                        "of already (same name and content); a step that does not give its index (no %%T, no "
                        "'step' or 'iteration' in the file) continues after DST's last step")
    add_option(g, "allow_duplicate")
    g.add_argument("--as-step", type=int, default=None, metavar="N",
                   help="the index of the step written (SRC must give one step)")
    g.add_argument("--time", type=float, default=None, metavar="T",
                   help="the time of the step written (SRC must give one step)")
    add_option(g, "attr")
    add_option(g, "time_from")
    add_option(g, "axes")
    add_option(p, "progress")
    p.set_defaults(func=cmd_convert)

