"""Grid fields in Python: what a field is in memory and how its file is written and read.

- ``model``: ``Field`` and ``FieldBlock`` (in memory) and ``Grid``, the geometry they share;
- ``halo``: ghost widths, periodic flags and the pieces a halo is filled from;
- ``theta``: a thetaMode field seen on a Cartesian grid (``CartesianView``);
- ``file``: the field file (``write_field_file``, ``StoredField``: reads, samples, halos);
- ``blocks``: the per-rank blocks of a parallel write, checked and split;
- ``queries``: fields named in a particle query (sampled at the particles, as columns).

Each module imports only those before it in this list. The public names keep
their first home too: ``motes.Field`` and ``motes.field.FieldBlock``."""

from .model import Field, FieldBlock, Grid

__all__ = ["Field", "FieldBlock", "Grid"]
