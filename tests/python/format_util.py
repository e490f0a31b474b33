"""The version a file is written with (docs/format.md §4.2, §7): the lowest that holds what it
has. Since format 2.5 a lossless file whose coded blocks hold packed words (feature bit
``packed-blocks``) is 2.5 whatever else it has, and since 2.6 a file whose fine levels are
stored region by region (``regional-detail``) is 2.6."""

PACKED_BLOCKS = 0x20
REGIONAL_DETAIL = 0x40


def written_version(f, minor):
    """(2, 6) for a file with regional detail, (2, 5) for one with packed words, else (2, minor):
    the minor of what else it holds."""
    if f.required_features & REGIONAL_DETAIL:
        return (2, 6)
    return (2, 5) if f.required_features & PACKED_BLOCKS else (2, minor)
