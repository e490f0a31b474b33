"""``motes info``: steps, species, columns, sizes of a dataset: the report of
:meth:`motes.Dataset.describe`, as text or (``--json``) as it is."""

from __future__ import annotations

import json
from typing import Any, Dict

from .common import open_dataset
from .options import add_command, add_option
from .text import byte_size, out, significant, text_table, thousands


def _skipped_text(skipped) -> str:
    """The steps a writer skipped, as `motes info` lists them: how many and why, then each
    index and time (the first and last six when there are more than twelve)."""
    shown = skipped if len(skipped) <= 12 else skipped[:6] + [None] + skipped[-6:]
    items = ["..." if k is None else f"{k['index']} (t={significant(k['time'])})" for k in shown]
    reasons = sorted({k["reason"] for k in skipped})
    return f"{len(skipped)} not written ({', '.join(reasons)}): " + ", ".join(items)


def _print_info(info: Dict[str, Any]) -> None:
    steps = info["steps"]
    out(f"dataset    {info['path']}")
    skipped = info.get("skipped") or []
    if not steps:
        out("steps      none (empty dataset)")
        if skipped:
            out(f"skipped    {_skipped_text(skipped)}")
        return
    times = [s["time"] for s in steps if s["time"] is not None]
    tr = f", time {significant(min(times))} .. {significant(max(times))}" if times else ""
    out(f"steps      {len(steps)} (index {steps[0]['index']} .. {steps[-1]['index']}{tr})")
    if skipped:
        out(f"skipped    {_skipped_text(skipped)}")
    out(f"species    {', '.join(info['species']) or 'none'}")
    if info.get("fields"):
        out(f"fields     {', '.join(info['fields'])}")
    out(f"particles  {thousands(info['particle_count'])} in all steps")
    if info["attributes"]:
        out(f"attributes {json.dumps(info['attributes'])}")
    out("")
    shown = steps if len(steps) <= 40 else steps[:20] + steps[-20:]
    rows = []
    for i, s in enumerate(shown):
        if len(steps) > 40 and i == 20:
            rows.append(["...", "", "", ""])
        entries = [(name, thousands(sp["count"])) for name, sp in s["species"].items()]
        entries += [(f"{name} (field)", " x ".join(map(str, f["dims"]))) for name, f in s.get("fields", {}).items()]
        for j, (name, size) in enumerate(entries):
            rows.append([str(s["index"]) if j == 0 else "", significant(s["time"]) if j == 0 else "", name, size])
    out(text_table(["step", "time", "species / field", "particles / samples"], rows, ["<", ">", "<", ">"],
                indent="  "))
    for d in info["files"]:
        sz = d["sizes"]
        lo, hi = d["bounds"]["min"], d["bounds"]["max"]
        out("")
        out(f"step {d['step']}, species '{d['species']}': {thousands(d['count'])} particles")
        parts = f", {d['parts']} part files" if d.get('parts', 1) > 1 else ""
        ids = f", id index on '{d['id_index']}'" if d.get("id_index") else ""
        out(f"  file     {d['path']} (format {d['format_version']}{parts}{ids})")
        out("  bounds   " + "  ".join(f"{a} [{significant(l)}, {significant(h)}]" for a, l, h in zip("xyz", lo, hi)))
        out(f"  tree     {d['levels']} levels, {thousands(d['nodes'])} nodes, leaf size {d['leaf_size']}, "
             f"{d['lod_count']} LOD particles per inner node")
        raw = sz.get("raw_data_bytes") or 0
        of_raw = f"  ({100.0 * sz['file_bytes'] / raw:.1f}% of the values as numbers, {byte_size(raw)})" if raw else ""
        out(f"  size     {byte_size(sz['file_bytes'])} = data {byte_size(sz['data_bytes'])} + index "
             f"{byte_size(sz['index_bytes'])} + quantile codes {byte_size(sz['quantile_index_bytes'])} + tail indexes "
             f"{byte_size(sz.get('tail_index_bytes', 0))} + padding {byte_size(sz['padding_bytes'])}" + of_raw)
        rows = []
        lossy = any(c.get("error_bound") for c in d["columns"])
        for c in d["columns"]:
            integer = c["dtype"][0] in "iu"
            fmt = (lambda v: "-" if v is None else (str(int(v)) if integer else significant(v)))
            st = c["storage"]
            ratio = f"{st['raw_bytes'] / st['data_bytes']:.2f}x" if st["data_bytes"] else "-"
            row = [c["name"], c["dtype"], c["index"], c["unit_label"], fmt(c["min"]), fmt(c["max"]),
                   thousands(c["nan_count"]) if c["nan_count"] else "", byte_size(st["data_bytes"]), ratio, st["codec"]]
            if lossy:
                row.insert(7, significant(c["error_bound"]) if c.get("error_bound") else "exact")
            rows.append(row)
        head = ["name", "dtype", "index", "unit", "min", "max", "NaNs", "stored", "ratio", "codec"]
        align = ["<", "<", "<", "<", ">", ">", ">", ">", ">", "<"]
        if lossy:
            head.insert(7, "error bound")
            align.insert(7, ">")
        out("  columns")
        out(text_table(head, rows, align, indent="    "))
        for name, q in d.get("derived", {}).items():  # format 2.4: indexed, not stored
            span = "no values" if q["min"] is None else f"[{significant(q['min'])}, {significant(q['max'])}]"
            out(f"  derived  {name} = {q['expression']}  {span}" + (f", {thousands(q['nan_count'])} NaNs" if q["nan_count"] else ""))
    for d in info.get("field_files", []):
        out("")
        comps = f", components {', '.join(d['components'])}" if d["components"] else ""
        theta = d.get("geometry") == "thetaMode"
        axes = f"(z, r), thetaMode: {d['modes']} modes, imag {d['imag']}" if theta else "(x, y, z)"
        out(f"step {d['step']}, field '{d['field']}': {d['dtype']} {' x '.join(map(str, d['dims']))} "
             f"{axes}{comps}, {d['centering']}-centred" + (f", unit {d['unit_label']}" if d["unit"] else ""))
        more = d.get("parts", 1) - 1
        parts = f" (and {more} more part file{'s' if more > 1 else ''})" if more else ""
        out(f"  file     {d['path']}{parts}")
        geometry = ("rectilinear" if d["rectilinear"] else
                    "origin " + ", ".join(map(significant, d["origin"])) + "; spacing " + ", ".join(map(significant, d["spacing"])))
        out(f"  grid     {geometry}; {d['levels']} levels, HZ bitmask {d['bitmask']}")
        ratio = f" ({d['raw_bytes'] / d['stored_bytes']:.2f}x)" if d["stored_bytes"] else ""
        within = f", within {significant(d['tolerance'])} (ZFP)" if d.get("tolerance") else ""
        out(f"  stored   {byte_size(d['stored_bytes'])} for {byte_size(d['raw_bytes'])} of samples{ratio}{within}")
        out("  range    " + "; ".join(f"[{significant(lo) if lo is not None else '-'}, {significant(hi) if hi is not None else '-'}]"
                                       for lo, hi in d["ranges"]))


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "-"


def _print_sizes(s: Dict[str, Any]) -> None:
    """``motes info --sizes``: :meth:`motes.Dataset.sizes` as tables."""
    raw, total = s["raw_bytes"], s["file_bytes"]
    steps = s["steps"]
    span = f"step {steps[0]}" if len(steps) == 1 else f"{len(steps)} steps ({steps[0]} .. {steps[-1]})" if steps else "no steps"
    out(f"dataset    {s['path']}")
    out(f"sizes      {span}, {len(s['species'])} species, {thousands(s['particles'])} particles in "
        f"{thousands(s['files'])} particle file{'s' if s['files'] != 1 else ''}")
    out(f"           {byte_size(total)} in files = {_pct(total, raw)} of the {byte_size(raw)} of values as numbers")
    for sp in s["species"]:
        n = sp["particles"]
        out("")
        out(f"species '{sp['name']}': {thousands(n)} particles in {thousands(sp['files'])} "
            f"file{'s' if sp['files'] != 1 else ''}, "
            f"{byte_size(sp['file_bytes'])} ({_pct(sp['file_bytes'], sp['raw_bytes'])} of its {byte_size(sp['raw_bytes'])})")
        rows = []
        ident = sp["id_index"]
        for c in sp["columns"]:
            by_index = ident is not None and c["name"] == ident["column"] and not c["values_bytes"]
            q = ""
            if c["quantile_files"]:
                some = f" ({c['quantile_files']}/{sp['files']} files)" if c["quantile_files"] < sp["files"] else ""
                q = f"{byte_size(c['quantile_bytes'])}{some}"
            rows.append([c["name"], c["dtype"], byte_size(c["raw_bytes"]),
                         "by its id index" if by_index else byte_size(c["values_bytes"]),
                         "" if by_index else f"{c['values_percent']:.1f}" if c["values_percent"] is not None else "-",
                         "" if by_index else f"{c['bits_per_particle']:.2f}" if c["bits_per_particle"] is not None else "-",
                         q or "-", byte_size(c["tail_bytes"]) if c["tail_bytes"] else "-",
                         byte_size(c["ranges_bytes"] + c["bitmaps_bytes"])])
        out(text_table(["column", "dtype", "raw", "values", "% of raw", "bits/particle", "quantile index", "tail index",
                        "ranges+bitmaps"], rows, ["<", "<", ">", ">", ">", ">", ">", ">", ">"], indent="  "))
        level = sp["file_level"]
        parts = []
        for role, b in level.items():
            if not b:
                continue
            text = f"{role} {byte_size(b)}"
            if role == "id index" and ident is not None and ident["bits_per_particle"] is not None:
                text += (f" ({ident['bits_per_particle']:.2f} bits/particle on '{ident['column']}'; "
                         f"log2(N!)/N = {ident['log2_n_factorial_per_particle']:.2f})")
            parts.append(text)
        out("  file level: " + ", ".join(parts))
    idx = s["index"]
    out("")
    largest = f"; the largest in one file {idx['largest_file_percent']:.2f}%" if s["files"] > 1 else ""
    out(f"indexes    {byte_size(idx['bytes'])} = {_pct(idx['bytes'], raw)} of raw (budget {idx['budget_percent']:g}%"
        f"{largest}): " + ", ".join(f"{r} {byte_size(b)}" for r, b in idx["roles"].items() if b))
    roles = s["roles"]
    order = ("id index", "derived quantities", "schema", "other", "header and padding")
    rest = {r: roles[r] for r in sorted(roles, key=lambda r: order.index(r) if r in order else len(order))
            if r not in idx["roles"] and r != "values" and roles[r]}
    out(f"total      {byte_size(total)} = values {byte_size(roles.get('values', 0))} + indexes "
        f"{byte_size(idx['bytes'])}" + "".join(f" + {r} {byte_size(b)}" for r, b in rest.items()))
    out("why")
    width = max((len(r) for r in s["why"]), default=0)
    for role, text in s["why"].items():
        out(f"  {role:<{width}}  {text}")


def cmd_info(args) -> int:
    ds = open_dataset(args.dataset)
    if args.sizes:
        sizes = ds.sizes(args.step, args.species)
        if args.json:
            out(json.dumps(sizes, indent=2, allow_nan=False))
        else:
            _print_sizes(sizes)
        return 0
    info = ds.describe(args.step, args.species, all_steps=args.all)
    if args.json:
        out(json.dumps(info, indent=2, allow_nan=False))
    else:
        _print_info(info)
    return 0


DESCRIPTION = """\
Describes a dataset: its steps (index, time), the steps a writer skipped (a background
writer with on_backlog="skip"), species and particle counts, and for the
files of one step (default: the last; --all: every step) the columns (dtype, index kind,
unit, min/max), spatial bounds, file sizes (data, index, quantile codes, padding), codecs
and the spatial tree (levels, nodes).

--sizes says where the bytes of every step (or --step's) go: per column its values (share
of its raw bytes, bits per particle), quantile index, tail index, node ranges and bitmaps;
the tree, tail covers, id index (bits per particle next to log2(N!)/N) and headers; the
indexes against the writer's index budget (5% of the raw bytes), and why each is there."""

EXAMPLES = """\
  motes info run.motes
  motes info run.motes --step 0 --species ions
  motes info run.motes --json | jq '.files[0].columns'
  motes info run.motes --sizes
  motes info run.motes --sizes --step 0 --json | jq .index"""


def add_parser(subs) -> None:
    p = add_command(subs, "info", "describe a dataset: steps, species, columns, sizes", DESCRIPTION, EXAMPLES)
    add_option(p, "dataset")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    add_option(p, "step", note="its files are described")
    add_option(p, "species", help="describe only this species")
    p.add_argument("--all", action="store_true", help="describe the files of every step")
    p.add_argument("--sizes", action="store_true",
                   help="where the bytes go, per column and index, over every step (or --step's), and why each index is there")
    p.set_defaults(func=cmd_info)
