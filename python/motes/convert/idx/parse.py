"""The parser of an IDX dataset's text header (the ``.idx`` file, version 6: the keys of
:mod:`motes.convert.idx.header`), as OpenVisus' ``IdxFile::readFromOldFormat`` reads it:
every problem a FormatError naming the file, the line and the key."""

from __future__ import annotations

import json
import math
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from ... import _core
from ...errors import FormatError, UsageError
from .header import IDX_DTYPES, MAX_TIMES, TIME_TEMPLATE, IdxField, IdxHeader, guess_filename_template, hex_width

__all__ = ["parse"]

class _Lines:
    """The (key) -> (value, line number) map of a header text."""

    def __init__(self, text: str, path: str):
        self.path = path
        self.values: Dict[str, Tuple[str, int]] = {}
        key, value, at = None, [], 0
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("("):
                if key is not None:
                    self.values[key] = (" ".join(value).strip(), at)
                key, value, at = line, [], n
            elif key is None:
                raise FormatError(f"{path}: line {n}: text before the first (key) line: '{line[:60]}'")
            else:
                value.append(line)
        if key is not None:
            self.values[key] = (" ".join(value).strip(), at)

    def error(self, key: str, why: str) -> FormatError:
        line = self.values.get(key, ("", 0))[1]
        where = f"line {line} {key}" if line else key
        return FormatError(f"{self.path}: {where}: {why}")

    def get(self, key: str, required: bool = False) -> Optional[str]:
        if key not in self.values:
            if required:
                raise FormatError(f"{self.path}: no {key} line (an IDX header needs it)")
            return None
        return self.values[key][0]

    def integer(self, key: str, default: Optional[int] = None, lo: int = -(1 << 62), hi: int = 1 << 62) -> int:
        text = self.get(key, required=default is None)
        if text is None:
            return default
        try:
            v = int(text)
        except ValueError:
            raise self.error(key, f"'{text[:60]}' is not an integer") from None
        if not lo <= v <= hi:
            raise self.error(key, f"{v} is outside [{lo}, {hi}]")
        return v

    def numbers(self, key: str) -> Optional[List[float]]:
        text = self.get(key)
        if text is None:
            return None
        try:
            v = [float(t) for t in text.split()]
        except ValueError:
            raise self.error(key, f"'{text[:60]}' is not a list of numbers") from None
        if not all(math.isfinite(x) for x in v):
            raise self.error(key, "has a number that is not finite")
        return v


def _split_fields(text: str) -> List[str]:
    """OpenVisus' parseFields: '+' separates fields outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "+" and depth == 0:
            if "".join(cur).strip():
                out.append("".join(cur).strip())
            cur = []
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _bracket(text: str, name: str) -> Optional[str]:
    """The argument of ``name(...)`` in a field's text (parseRoundBracketArgument)."""
    at = text.find(name + "(")
    if at < 0:
        return None
    rest = text[at + len(name) + 1:]
    end = rest.find(")")
    return (rest if end < 0 else rest[:end]).strip()


_DTYPE = re.compile(r"(?:(\d+)\s*\*\s*)?(u?int|float)\s*(\d+)(?:\s*\[\s*(\d+)\s*\])?")


def _parse_field(text: str, lines: _Lines) -> IdxField:
    parts = text.split()
    if len(parts) < 2:
        raise lines.error("(fields)", f"field '{text[:60]}' has no dtype")
    name, dt = parts[0], parts[1].lower()
    m = _DTYPE.fullmatch(dt)
    if not m or (m.group(1) and m.group(4)):
        raise lines.error("(fields)", f"field '{name}' has dtype '{parts[1][:40]}' (IDX dtypes: int8-64, uint8-64, "
                          f"float32, float64, with [n] components)")
    base = f"{m.group(2)}{m.group(3)}"
    if base not in IDX_DTYPES:
        raise lines.error("(fields)", f"field '{name}' has dtype '{parts[1][:40]}', which motes cannot read "
                          f"(IDX dtypes motes reads: {', '.join(IDX_DTYPES)})")
    comps = int(m.group(1) or m.group(4) or 1)
    if not 1 <= comps <= 64:
        raise lines.error("(fields)", f"field '{name}' has {comps} components (1 to 64 expected)")
    # Field::fromString: default_compression(), compression(), compressed(), a bare "compressed".
    compression = _bracket(text, "default_compression")
    if compression is None:
        compression = _bracket(text, "compression")
    if compression is None:
        compression = _bracket(text, "compressed")
    if compression is None:
        compression = "zip" if "compressed" in text else ""
    layout = _bracket(text, "default_layout")
    if layout is None:
        layout = _bracket(text, "layout")
    if layout is None:
        layout = _bracket(text, "format") if "format" in text else ""
    layout = "hzorder" if layout == "0" or "hz" in (layout or "") else "row-major"
    default = _bracket(text, "default_value")
    try:
        default_value = int(default) if default else 0
    except ValueError:
        raise lines.error("(fields)", f"field '{name}' has default_value('{default[:20]}')") from None
    dt = IDX_DTYPES[base]
    limits = np.iinfo(dt) if dt.kind in "iu" else np.finfo(dt)
    if not limits.min <= default_value <= limits.max:
        raise lines.error("(fields)", f"field '{name}' has default_value({default_value}), outside its dtype {base}")
    return IdxField(name, IDX_DTYPES[base], comps, compression or "raw", layout, default_value)


def _parse_time(text: str, lines: _Lines):
    parts = text.split(" ")
    parts = [p for p in parts if p]
    if len(parts) < 2:
        raise lines.error("(time)", f"'{text[:60]}' is not 'From To template', 'template (a,b,step)...' "
                          f"or '* * template'")
    if parts[0] == "*":
        if len(parts) != 3 or parts[1] != "*":
            raise lines.error("(time)", f"'{text[:60]}' is not '* * template'")
        return None, _time_template(parts[2], lines)
    try:
        a = float(parts[0])
    except ValueError:
        a = None
    times: List[float] = []
    if a is not None:
        try:
            if len(parts) != 3:
                raise ValueError
            b = float(parts[1])
        except ValueError:
            raise lines.error("(time)", f"'{text[:60]}' is not 'From To template'") from None
        _add_times(times, a, b, 1.0, lines)
        return tuple(times), _time_template(parts[2], lines)
    template = _time_template(parts[0], lines)
    for p in parts[1:]:
        if not (p.startswith("(") and p.endswith(")")):
            raise lines.error("(time)", f"'{p[:40]}' is not a range (From,To,Step)")
        try:
            r = [float(v) for v in p[1:-1].split(",") if v.strip()]
        except ValueError:
            raise lines.error("(time)", f"'{p[:40]}' is not a range (From,To,Step)") from None
        if not r or len(r) > 3:
            raise lines.error("(time)", f"'{p[:40]}' is not a range (From,To,Step)")
        a = r[0]
        b = r[1] if len(r) >= 2 else a
        _add_times(times, a, b, r[2] if len(r) == 3 else 1.0, lines)
    if not times:
        raise lines.error("(time)", "lists no time step")
    return tuple(sorted(set(times))), template


def _add_times(times: list, a: float, b: float, step: float, lines: _Lines) -> None:
    if not all(math.isfinite(v) for v in (a, b, step)) or step <= 0 or b < a:
        raise lines.error("(time)", f"range ({a}, {b}, {step}) is not From <= To with a positive Step")
    n = int((b - a) / step + 1e-9) + 1
    if len(times) + n > MAX_TIMES:
        raise lines.error("(time)", f"lists more than {MAX_TIMES} time steps")
    for i in range(n):
        t = a + i * step
        times.append(int(t) if float(t).is_integer() else t)


def _time_template(t: str, lines: _Lines) -> str:
    if not TIME_TEMPLATE.fullmatch(t):
        raise lines.error("(time)", f"time template '{t[:60]}' is not text with one %d-like conversion")
    return t


def parse(text: str, path: str = "<idx>") -> IdxHeader:
    """The header of a ``.idx`` text (FormatError naming ``path``, the line and the key)."""
    if not isinstance(text, str):
        raise UsageError("parse takes the header's text")
    lines = _Lines(text, path)
    version = lines.integer("(version)")
    if version != 6:
        raise lines.error("(version)", f"IDX version {version} (motes reads version 6, what OpenVisus writes)")
    bits = lines.get("(bits)", required=True)
    if not bits.startswith("V"):
        raise lines.error("(bits)", f"bitmask '{bits[:60]}' does not start with 'V' (motes reads V bitmasks)")
    try:
        order = _core.HzOrder(bits)
    except (FormatError, UsageError) as e:
        raise lines.error("(bits)", str(e)) from None
    pow2 = order.pow2_dims
    pdim = 1 + max((int(c) for c in bits[1:]), default=0)
    box = lines.numbers("(box)")
    if box is None:
        raise FormatError(f"{path}: no (box) line (an IDX header needs it)")
    if not box or len(box) % 2 or len(box) > 6 or not all(float(v).is_integer() for v in box):
        raise lines.error("(box)", f"'{lines.get('(box)')[:60]}' is not 1 to 3 pairs of integers")
    ndim = len(box) // 2
    if pdim > ndim:
        raise lines.error("(box)", f"has {ndim} axes but the bitmask {bits[:60]} has {pdim}")
    dims = []
    for a in range(ndim):
        lo, hi = int(box[2 * a]), int(box[2 * a + 1])
        if lo != 0:
            raise lines.error("(box)", f"axis {'xyz'[a]} starts at {lo} (motes reads boxes starting at 0)")
        if hi < 0 or hi + 1 > pow2[a]:
            raise lines.error("(box)", f"axis {'xyz'[a]} ends at {hi}, outside the bitmask's {pow2[a]} samples")
        dims.append(hi + 1)
    text_fields = lines.get("(fields)", required=True)
    fields = [_parse_field(t, lines) for t in _split_fields(text_fields)]
    if not fields:
        raise lines.error("(fields)", "lists no field")
    if len({f.name for f in fields}) != len(fields):
        raise lines.error("(fields)", "lists a field name twice")
    maxh = len(bits) - 1
    bpb = lines.integer("(bitsperblock)", lo=0, hi=62)
    if bpb == 0:
        bpb = min(maxh, 16)  # IdxFile::validate
    bpb = min(bpb, maxh)
    if bpb <= 0:
        raise lines.error("(bitsperblock)", f"the bitmask {bits[:60]} leaves no bits per block")
    total = 1 << (maxh - bpb)
    template = lines.get("(filename_template)") or ""
    bpf = lines.integer("(blocksperfile)", lo=-1, hi=1 << 40)
    if bpf == -1 or (bpf == 0 and template and "%" not in template):
        bpf = total
    elif bpf == 0:
        per_block = sum(f.sample_size for f in fields) << bpb
        bpf = max(1, min(total, (128 << 20) // per_block))
    interleave = lines.integer("(interleave block)", 0, lo=0, hi=1 << 40)
    if lines.get("(interleave)") is not None:
        interleave = lines.integer("(interleave)", lo=0, hi=1 << 40)
    if not template:
        template = guess_filename_template(maxh, bpb, path)
    if "%" in template:
        for c, ch in enumerate(template):
            if ch == "%":
                try:
                    hex_width(template, c)
                except FormatError as e:
                    raise lines.error("(filename_template)", str(e)) from None
    missing = lines.integer("(missing_blocks)", 0, lo=0, hi=1)
    arco = lines.integer("(arco)", 0)
    if arco:
        raise lines.error("(arco)", f"ARCO datasets ({arco}) are not read by motes")
    times, time_template = (0,), ""
    ttext = lines.get("(time)")
    if ttext is not None:
        times, time_template = _parse_time(ttext, lines)
    physic = lines.numbers("(physic_box)")
    if physic is not None and (len(physic) % 2 or not physic):
        raise lines.error("(physic_box)", "is not pairs of numbers")
    l2p = lines.numbers("(logic_to_physic)")
    motes_meta = None
    mtext = lines.get("(motes)")
    if mtext is not None:
        try:
            motes_meta = json.loads(mtext)
        except ValueError as e:
            raise lines.error("(motes)", f"is not JSON ({e})") from None
        if not isinstance(motes_meta, dict):
            raise lines.error("(motes)", "is not a JSON object")
    known = {"(version)", "(bits)", "(box)", "(fields)", "(bitsperblock)", "(blocksperfile)", "(interleave block)",
             "(interleave)", "(filename_template)", "(missing_blocks)", "(arco)", "(time)", "(physic_box)",
             "(logic_to_physic)", "(motes)"}
    metadata = {k[1:-1] if k.endswith(")") else k[1:]: v for k, (v, _) in lines.values.items() if k not in known}
    return IdxHeader(dims=tuple(dims), fields=fields, bitmask=bits, bits_per_block=bpb, blocks_per_file=bpf,
                     version=version, interleave=interleave, times=times, time_template=time_template,
                     filename_template=template, missing_blocks=missing, physic_box=tuple(physic) if physic else None,
                     logic_to_physic=tuple(l2p) if l2p else None, motes=motes_meta, metadata=metadata)
