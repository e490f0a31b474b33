"""What ``motes write`` and ``motes generate`` share: the columns to write with the step
metadata their input carries (:class:`Input`), the writing options, and the write of one step
with its summary."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .. import _defaults
from ..errors import UsageError
from .common import show_progress
from .options import add_option, key_value, nonneg_int, positive_int
from .text import byte_size, out, rate, significant, thousands


@dataclass
class Input:
    """What an input holds: its columns, and the step metadata it carries (step index,
    time and species name: None when the input does not say)."""

    columns: Dict[str, Any]
    attributes: Dict[str, Any] = field(default_factory=dict)
    time: Optional[float] = None
    step: Optional[int] = None
    species: Optional[str] = None
    units: Dict[str, str] = field(default_factory=dict)
    time_missing: str = ""   # why the input gives no time (see motes.convert.base.Step)
    time_from: bool = False  # whether --time-from can take its time from the input


def _last_step(path: str):
    from ..convert.motes_format import last_step

    return last_step(path)


def write_step(args, inp: Input, source: str) -> int:
    """Writes ``inp`` as one step of ``args.dataset`` with the writing options, and prints what
    was written (``source`` names the input)."""
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
    last = _last_step(args.dataset)
    step = args.step if args.step is not None else inp.step if inp.step is not None else \
        0 if last is None else last[0] + 1
    t = args.time if args.time is not None else inp.time if inp.time is not None else 0.0
    if args.time is None and inp.time_missing:  # a step added at time 0: say so, once per step
        from ..convert.base import warn
        from ..convert.series import untimed_warning

        warn(untimed_warning(source, inp.time_missing, step, one_file=True, time_from=inp.time_from,
                             again=last is not None and last[1] == 0))
    species = args.species or inp.species or "particles"
    attributes = {**inp.attributes, **dict(getattr(args, "attr", None) or [])}
    n = len(next(iter(cols.values())))
    in_bytes = sum(v.nbytes for v in cols.values())
    t0 = time.perf_counter()
    summaries = write(args.dataset, cols, step=step, time=t, species=species, index=index, units=units,
                      attributes=attributes, leaf_size=args.leaf_size, lod_count=args.lod_count,
                      threads=args.threads, progress=show_progress(args))
    seconds = time.perf_counter() - t0
    s = summaries[0] if summaries else {}
    out(f"wrote step {step} (time {significant(t)}) of {args.dataset}, species '{species}', from {source}")
    from ..convert.provenance import KEY

    shown = {k: v for k, v in attributes.items() if k != KEY}  # the source file: the line above
    if shown:
        out(f"  attributes {json.dumps(shown)}")
    out(f"  particles  {thousands(n)} x {len(cols)} columns ({', '.join(cols)})")
    out(f"  bytes      {sizes_text(s, in_bytes)}")
    indexes = indexes_text(args.dataset, step, species)
    if indexes:
        out(f"  indexes    {indexes}")
    out(f"  tree       {s.get('level_count', '?')} levels, {thousands(s.get('node_count', 0))} nodes")
    out(f"  seconds    {seconds:.3f} (layout {s.get('layout_seconds', 0):.3f}, "
        f"write {s.get('write_seconds', 0):.3f})")
    out(f"  rate       {rate(n, seconds, 'particles')}, {rate(in_bytes, seconds, 'B')}")
    return 0


def sizes_text(summary: Dict[str, Any], raw: int) -> str:
    """What a written file takes against the raw bytes of its values (the summary's
    ``data_bytes``, else ``raw``): the file, its columns as stored (``stored_bytes``, after
    compression) and the rest, the index (tree, value indexes, headers, padding), e.g.
    ``85 MiB on disk, 111.4% of the 76.3 MiB raw values: columns 70 MiB (91.7%), index 15 MiB (19.7%)``."""
    raw = summary.get("data_bytes", raw)
    total = summary.get("file_bytes", 0)
    stored = summary.get("stored_bytes", total)
    if not raw:
        return f"{byte_size(total)} on disk"

    def share(n: int) -> str:
        return f"{100.0 * n / raw:.1f}%"

    return (f"{byte_size(total)} on disk, {share(total)} of the {byte_size(raw)} raw values: columns "
            f"{byte_size(stored)} ({share(stored)}), index {byte_size(total - stored)} ({share(total - stored)})")


def indexes_text(path: str, step: int, species: str) -> str:
    """What the step's indexes take against the writer's index budget, from its files'
    sections (:meth:`motes.Dataset.sizes`), e.g. ``181 KiB = 4.6% of the raw values (budget
    5%): quantile index 977 KiB (ux), tail index 160 KiB, tail covers 353 KiB, ranges and
    bitmaps 275 KiB, tree 42 KiB; id index 420 KiB (18.1 bits/particle, log2(N!)/N 19.3)``;
    empty when the step has no particle files."""
    from ..dataset import open as open_dataset

    s = open_dataset(path).sizes(step, species)
    raw, idx = s["raw_bytes"], s["index"]
    if not s["files"] or not raw:
        return ""
    roles = dict(idx["roles"])
    roles["ranges and bitmaps"] = roles.pop("node ranges", 0) + roles.pop("bitmaps", 0)
    coded = [c["name"] for sp in s["species"] for c in sp["columns"] if c["quantile_files"]]
    parts = []
    for role in ("quantile index", "tail index", "tail covers", "ranges and bitmaps", "tree"):
        if roles.get(role):
            what = f" ({', '.join(coded)})" if role == "quantile index" and coded else ""
            parts.append(f"{role} {byte_size(roles[role])}{what}")
    text = (f"{byte_size(idx['bytes'])} = {100.0 * idx['bytes'] / raw:.1f}% of the raw values "
            f"(budget {idx['budget_percent']:g}%): " + ", ".join(parts))
    for sp in s["species"]:
        ident = sp["id_index"]
        if ident and ident["bits_per_particle"] is not None:
            text += (f"; id index {byte_size(ident['bytes'])} ({ident['bits_per_particle']:.1f} bits/particle, "
                     f"log2(N!)/N {ident['log2_n_factorial_per_particle']:.1f})")
    return text


def add_write_options(p) -> None:
    g = p.add_argument_group("writing")
    add_option(g, "step", help="step index to write (default: the input's own, e.g. an .npz scalar 'step' or "
                               "'iteration'; else 0 for a new dataset, else last step + 1)")
    g.add_argument("--time", type=float, default=None,
                   help="physical time of the step (default: the input's own, e.g. an .npz scalar 'time'; else 0)")
    add_option(g, "species", help="species name (default: the input's own, else particles)")
    add_option(g, "attr")
    g.add_argument("--index", type=key_value, action="append", metavar="COL=KIND",
                   help="extra index for a column: auto, none or quantile (repeatable; auto builds a quantile "
                        "index for spatially incoherent columns)")
    g.add_argument("--unit", type=key_value, action="append", metavar="COL=UNIT",
                   help="physical unit of a column, stored in the schema (repeatable)")
    # Defaults: None, the core's (shown from its option structs, see motes._defaults).
    g.add_argument("--leaf-size", type=positive_int, default=None, help=_defaults.help_text("leaf_size"))
    g.add_argument("--lod-count", type=positive_int, default=None, help=_defaults.help_text("lod_count"))
    g.add_argument("--threads", type=nonneg_int, default=None, help=_defaults.help_text("threads"))
    add_option(g, "progress")
