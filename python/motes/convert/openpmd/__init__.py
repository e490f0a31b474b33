"""openPMD 1.1.0 particle and mesh import and export (``motes convert``, format name ``openpmd``).

Both directions go through openpmd-api (``import openpmd_api``) and stream: a species is
read ``chunk_rows`` rows at a time with ``load_chunk`` and written one motes chunk at a
time with ``store_chunk``, so memory stays bounded by the chunk size.

Mapping (the full rules, with examples, are in docs/convert-openpmd.md):

* an iteration is a :class:`~motes.convert.base.Step`: ``index`` is the iteration number,
  ``time`` is ``time * timeUnitSI`` (SI seconds); the raw ``time``, ``dt`` and
  ``timeUnitSI`` are kept in the step attributes, series-level attributes under
  ``attributes["openpmd"]``;
* a particle species is a :class:`~motes.convert.base.Species`; ``position`` plus
  ``positionOffset`` become the absolute positions ``x``, ``y``, ``z`` expressed in the
  unit of the ``position`` components; any other non-constant record component becomes a
  column named ``<record>`` (scalar record) or ``<record>_<component>``;
* constant record components (openPMD ``value`` + ``shape``) are not turned into columns;
  they are kept, with everything needed to write the species back, in
  ``species.attributes["openpmd"]``;
* the unit of every column is ``openpmd_unit(unitSI, unitDimension)``;
* the meshes of an iteration are the step's ``fields`` (:class:`motes.Field`), read when
  looked up: see :mod:`.meshes` for axis order, ``position`` and units.

The package: :mod:`.mapping` (records, components and units <-> columns; no openpmd-api),
:mod:`.meshes` (mesh records <-> fields; no openpmd-api), :mod:`.reader` (the source),
:mod:`.writer` (the destination), :mod:`.patches` (particlePatches), :mod:`.api` (the
openpmd-api import, errors and attributes).
Importing it does not import openpmd-api: ``read`` and ``write`` do.
"""

from .reader import read, stream
from .writer import write

__all__ = ["read", "stream", "write"]
