"""The public name of ``motes.fields.model`` (``motes.field.FieldBlock`` in the README and the
guide): grid fields in memory, ``Field`` and ``FieldBlock``, and the ``Grid`` they share."""

from .fields.model import AXES, THETA_AXES, Field, FieldBlock, Grid

__all__ = ["AXES", "THETA_AXES", "Field", "FieldBlock", "Grid"]
