"""The binary block files of an IDX version 6 dataset (OpenVisus' IdxDiskAccessV6).

A file holds ``blocks_per_file`` block slots of every field:

    10 big-endian uint32          file header (unused, zeros)
    fields x slots x 10 uint32    block headers, field-major: {prefix0, prefix1, offset_lo,
                                  offset_hi, size, flags, 4 unused}
    block payloads                anywhere after the headers, at their offsets

``flags`` & 0x0f is the compression (0 none, 3 zip = a zlib stream, 7 lz4 = one raw LZ4
block, 4 jpg, 6 png, 8 zfp), 0x10 the row-major layout (else HZ order). A slot with offset
0 or size 0 is a missing block. Decoded, a block is 2^bitsperblock samples, native
(little-endian) byte order, components interleaved.
"""

from __future__ import annotations

import os
import zlib
from typing import Dict, Iterable, Optional, Tuple

import numpy as np

from ...errors import FormatError, UsageError, storage_errors
from ..input_files import open_regular

__all__ = ["FILE_HEADER_BYTES", "BLOCK_HEADER_BYTES", "ROW_MAJOR", "CODES", "encode", "decode", "BlockFile",
           "write_block_file", "headers_size"]

FILE_HEADER_BYTES = 10 * 4
BLOCK_HEADER_BYTES = 10 * 4
ROW_MAJOR = 0x10
CODES = {"raw": 0, "zip": 3, "jpg": 4, "png": 6, "lz4": 7, "zfp": 8}
_NAMES = {v: k for k, v in CODES.items()}


def headers_size(fields: int, blocks_per_file: int) -> int:
    return FILE_HEADER_BYTES + fields * blocks_per_file * BLOCK_HEADER_BYTES


def _lz4():
    try:
        import lz4.block
    except ImportError:  # pragma: no cover - lz4 is a dependency of the fields extra
        raise UsageError("lz4 blocks need the lz4 package (pip install 'motes[fields]')") from None
    return lz4.block


def encode(data: memoryview, compression: str, level: int = 1) -> bytes:
    """A block's bytes as the compression stores them."""
    if compression == "raw":
        return bytes(data)
    if compression == "zip":
        return zlib.compress(data, level)
    if compression == "lz4":
        return _lz4().compress(data, store_size=False)
    raise UsageError(f"compression must be one of raw, zip, lz4, got {compression!r}")


def decode(payload: bytes, flags: int, nbytes: int, where: str) -> bytes:
    """The ``nbytes`` decoded bytes of a block (FormatError naming ``where`` otherwise)."""
    code = flags & 0x0F
    name = _NAMES.get(code)
    if name is None:
        raise FormatError(f"{where}: unknown compression {code} in the block header (flags {flags:#x})")
    if name == "raw":
        out = payload
    elif name == "zip":
        d = zlib.decompressobj()
        try:
            out = d.decompress(payload, nbytes)
        except zlib.error as e:
            raise FormatError(f"{where}: the zip (zlib) block does not decompress ({e})") from None
        if len(out) == nbytes and not d.eof:
            try:
                more = d.decompress(d.unconsumed_tail, 1)
            except zlib.error as e:
                raise FormatError(f"{where}: the zip (zlib) block does not decompress ({e})") from None
            if more or not d.eof:
                raise FormatError(f"{where}: the zip (zlib) block holds more than the {nbytes} bytes of a block")
    elif name == "lz4":
        lz4 = _lz4()
        try:
            out = lz4.decompress(payload, uncompressed_size=nbytes)
        except (lz4.LZ4BlockError, ValueError) as e:
            raise FormatError(f"{where}: the lz4 block does not decompress ({e})") from None
    else:
        raise FormatError(f"{where}: {name} blocks (flags {flags:#x}) are not read by motes (raw, zip and lz4 are)")
    if len(out) != nbytes:
        raise FormatError(f"{where}: the block decodes to {len(out)} bytes, not the {nbytes} of "
                          f"2^bitsperblock samples")
    return out


class BlockFile:
    """One block file open for reading: its header table, and the blocks by (field, slot)."""

    def __init__(self, path: str, fields: int, blocks_per_file: int):
        self.path = path
        self.fields, self.slots = fields, blocks_per_file
        size = headers_size(fields, blocks_per_file)
        with storage_errors(path, "cannot open the IDX block file"):
            # without blocking, then checked: a damaged template can name a FIFO, a device or a
            # directory; ``path`` is the real path (links resolved), so no link is followed
            self.fd = open_regular(path, "IDX block file (as the header names it)", follow=False)
        try:
            with storage_errors(path, "cannot read the IDX block file"):
                self.size = os.fstat(self.fd).st_size
                if self.size < size:
                    raise FormatError(f"{path}: {self.size} bytes, shorter than the {size} bytes of its headers "
                                      f"({fields} fields x {blocks_per_file} blocks)")
                raw = os.pread(self.fd, size, 0)
            if len(raw) != size:
                raise FormatError(f"{path}: the headers are truncated")
            self.table = np.frombuffer(raw, dtype=">u4", offset=FILE_HEADER_BYTES).reshape(fields, blocks_per_file, 10)
        except BaseException:
            os.close(self.fd)
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def header(self, field: int, slot: int) -> Tuple[int, int, int]:
        """(offset, size, flags) of a block slot."""
        h = self.table[field, slot]
        return (int(h[3]) << 32) | int(h[2]), int(h[4]), int(h[5])

    def read(self, field: int, slot: int, nbytes: int, where: str) -> Optional[Tuple[bytes, int]]:
        """The decoded bytes and flags of a block, None for a missing block."""
        offset, size, flags = self.header(field, slot)
        if offset == 0 or size == 0:
            return None
        where = f"{self.path}: {where}"
        if offset < headers_size(self.fields, self.slots) or offset + size > self.size:
            raise FormatError(f"{where}: the block header's bytes [{offset}, {offset + size}) are outside the "
                              f"file's blocks [{headers_size(self.fields, self.slots)}, {self.size})")
        if flags & ~0x1F:
            raise FormatError(f"{where}: unknown flags {flags:#x} in the block header")
        with storage_errors(self.path, "cannot read the IDX block file"):
            payload = os.pread(self.fd, size, offset)
        if len(payload) != size:
            raise FormatError(f"{where}: the block is truncated")
        return decode(payload, flags, nbytes, where), flags


def write_block_file(path: str, fields: int, blocks_per_file: int,
                     blocks: Iterable[Tuple[int, int, bytes, int]]) -> None:
    """Writes a block file: ``blocks`` gives (field, slot, payload, flags); slots not given
    are missing blocks. Payloads go after the headers in the order given."""
    table = np.zeros((fields, blocks_per_file, 10), dtype=">u4")
    offset = headers_size(fields, blocks_per_file)
    with storage_errors(path, "cannot write the IDX block file"):
        with open(path, "wb") as f:
            f.seek(offset)
            for field, slot, payload, flags in blocks:
                n = len(payload)
                if n >= 1 << 31:
                    raise UsageError(f"{path}: a block of {n} bytes (IDX blocks hold < 2 GiB; lower bits_per_block)")
                f.write(payload)
                table[field, slot, 2] = offset & 0xFFFFFFFF
                table[field, slot, 3] = offset >> 32
                table[field, slot, 4] = n
                table[field, slot, 5] = flags
                offset += n
            f.seek(0)
            f.write(bytes(FILE_HEADER_BYTES))
            f.write(table.tobytes())
