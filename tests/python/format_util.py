"""The version a file is written with (docs/format.md §4.2, §7): the lowest that holds what it
has. Since format 2.5 a lossless file whose coded blocks hold packed words (feature bit
``packed-blocks``) is 2.5 whatever else it has."""

PACKED_BLOCKS = 0x20


def written_version(f, minor):
    """(2, 5) for a file with packed words, else (2, minor): the minor of what else it holds."""
    return (2, 5) if f.required_features & PACKED_BLOCKS else (2, minor)
