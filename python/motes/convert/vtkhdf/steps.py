"""The steps a VTKHDF writer has written (PolyData of particles, :mod:`.vtkhdf`, or ImageData
of fields, :mod:`.image`): their times, indices and attributes, the ``Steps`` group
of a time series (``NSteps``, ``Values``) and motes' own record of them."""

from __future__ import annotations

import json
from typing import List

import numpy as np

from ...errors import UsageError
from ..base import Step, warn


class StepLog:
    def __init__(self, path: str):
        self.path = path
        self.times: List[float] = []
        self.indices: List[int] = []
        self.attrs: List[dict] = []

    def add(self, step: Step, where: str) -> None:
        try:
            self.times.append(float(step.time))
            self.indices.append(int(step.index))
        except (TypeError, ValueError):
            raise UsageError(f"{where}: time must be a number and index an integer") from None
        self.attrs.append(step.attributes or {})

    def __len__(self) -> int:
        return len(self.times)

    def steps_group(self, root, stacklevel: int):
        """The ``Steps`` group of a time series with ``NSteps`` and ``Values`` (the times),
        warning when the times do not increase (ParaView expects them to)."""
        if any(b <= a for a, b in zip(self.times, self.times[1:])):
            warn(f"{self.path}: step times are not strictly increasing ({self.times[:8]}...); "
                 "ParaView expects increasing time values", stacklevel=stacklevel + 1)
        s = root.create_group("Steps")
        s.attrs.create("NSteps", np.int64(len(self.times)))
        s.create_dataset("Values", data=np.asarray(self.times, dtype=np.float64))
        return s

    def record(self, group) -> None:
        """motes' record of the steps: their indices, times and attributes (JSON)."""
        group.create_dataset("step_index", data=np.asarray(self.indices, dtype=np.int64))
        group.create_dataset("time", data=np.asarray(self.times, dtype=np.float64))
        group.attrs["step_attributes"] = json.dumps(self.attrs, default=str)
