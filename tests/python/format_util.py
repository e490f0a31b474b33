"""The version a file is written with (docs/format.md §4.2, §7): the lowest that holds what it
has. Since format 2.5 a lossless file whose coded blocks hold packed words (feature bit
``packed-blocks``) is 2.5 whatever else it has, and since 2.6 a file whose fine levels are
stored region by region (``regional-detail``) is 2.6, and since 2.7 one whose id column is
stored only as its id index (``ids-by-index``) is 2.7."""

PACKED_BLOCKS = 0x20
REGIONAL_DETAIL = 0x40
IDS_BY_INDEX = 0x80


def written_version(f, minor):
    """(2, 7) for a file storing its ids by their index, (2, 6) for one with regional detail,
    (2, 5) for one with packed words, else (2, minor): the minor of what else it holds."""
    if f.required_features & IDS_BY_INDEX:
        return (2, 7)
    if f.required_features & REGIONAL_DETAIL:
        return (2, 6)
    return (2, 5) if f.required_features & PACKED_BLOCKS else (2, minor)


def write_manifest(path, manifest) -> None:
    """Writes `manifest` (a dict) as dataset `path`'s manifest, an edit made on purpose: sealed
    (docs/format.md §3.3.9: its checksum made anew) when the core can parse the JSON, as it is
    otherwise (text a reader must refuse before any value is checked)."""
    import json
    import os

    from motes import UsageError, _core

    text = json.dumps(manifest)
    try:
        text = _core.seal_manifest(text)
    except UsageError:
        pass
    with open(os.path.join(os.fspath(path), "manifest.json"), "w", encoding="utf-8") as f:
        f.write(text)


def reseal(raw: bytes) -> bytes:
    """A sealed manifest's bytes edited on purpose, sealed again as docs/format.md §3.3.9 says
    (written from the spec, not from the core): its first line holds the XXH3-64 of the rest."""
    import xxhash

    head, tail = b'{\n "checksum": "', b'",\n'
    assert raw.startswith(head) and raw[32:35] == tail, "not a sealed manifest"
    rest = raw[35:]
    return head + xxhash.xxh3_64_hexdigest(rest).encode() + tail + rest


def core_write_options(monkeypatch, **settings) -> None:
    """Writers of this process (motes.write, motes.Writer) take the core's WriteOptions with
    `settings` set on top of what their arguments give, e.g. ids_by_index=False (the id
    column stored as well as its index, as before format 2.7) or index_budget=0 (indexes
    chosen as before the budget): options the Python API does not offer as arguments."""
    import motes.writer as writer

    make = writer._write_options

    def options(*args, **kwargs):
        o = make(*args, **kwargs)
        for name, value in settings.items():
            setattr(o, name, value)
        return o

    monkeypatch.setattr(writer, "_write_options", options)
