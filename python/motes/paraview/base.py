"""What motes' two VTK readers (:mod:`motes.paraview.reader`, :mod:`motes.paraview.field_reader`)
share: the dataset (``FileName``: its folder or its ``manifest.json``), settings that mark the
pipeline modified when they change, the time steps published to VTK and chosen by the time VTK
asks for, and how a failure is reported.

A failure motes means (a :class:`motes.MotesError`: an unknown field or column, a bad
expression, a damaged or missing dataset) or an I/O error is not a Python traceback: the
request returns failure and the message goes where ``vtkErrorMacro`` sends an algorithm's
errors, to its ErrorEvent observers if it has any, else to ``vtkOutputWindow`` (ParaView's
Output Messages window; stderr in pvbatch), prefixed with the reader's name and dataset.
:meth:`DatasetReader.GetErrorMessage` keeps it (empty once an update succeeds): ParaView's
information property ``ErrorMessage``, which a pvbatch script reads after ``UpdatePipeline()``
(``UpdatePropertyInformation()``, then ``GetPropertyValue("ErrorMessage")``) to fail the run.
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

import numpy as np
from vtkmodules.util.vtkAlgorithm import VTKPythonAlgorithmBase
from vtkmodules.vtkCommonCore import vtkCommand, vtkOutputWindow
from vtkmodules.vtkCommonExecutionModel import vtkDemandDrivenPipeline

__all__ = ["DatasetReader", "step_times"]


def step_times(times: Sequence[float], steps: Sequence[int]) -> List[float]:
    """The time value of each step as VTK sees it: the dataset's times when they increase
    strictly, else the step indexes (VTK needs distinct, increasing time steps)."""
    t = [float(v) for v in times]
    if all(b > a for a, b in zip(t, t[1:])) and all(np.isfinite(t)):
        return t
    return [float(s) for s in steps]


class DatasetReader(VTKPythonAlgorithmBase):
    """The base of both readers (see the module). ``label`` names the reader in its messages."""

    label = "motes reader"

    def __init__(self, output_type: str):
        VTKPythonAlgorithmBase.__init__(self, nInputPorts=0, nOutputPorts=1, outputType=output_type)
        self._path: Optional[str] = None
        self._dataset = None
        self._error, self._error_time = "", 0
        self.last_step: Optional[int] = None

    def _set(self, attr: str, value) -> None:
        if getattr(self, attr) != value:
            setattr(self, attr, value)
            self.Modified()

    def SetFileName(self, name: Optional[str]) -> None:
        """The dataset folder, or its manifest.json (what a file dialog picks)."""
        if name and os.path.basename(str(name)) == "manifest.json":
            name = os.path.dirname(str(name))
        if name != self._path:
            self._path, self._dataset = (str(name) if name else None), None
            self.Modified()

    def GetFileName(self) -> Optional[str]:
        return self._path

    def GetErrorMessage(self) -> str:
        """Why the last update failed; empty when it succeeded."""
        return self._error

    def dataset(self):
        import motes

        if self._dataset is None:
            if not self._path:
                raise motes.UsageError("no FileName: give the dataset folder or its manifest.json")
            self._dataset = motes.open(self._path)
        return self._dataset

    def steps(self) -> List[int]:
        """The steps this reader reads (every step of the dataset)."""
        return self.dataset().steps

    def time_values(self) -> List[float]:
        ds = self.dataset()
        steps = self.steps()
        return step_times([ds.times[ds.steps.index(s)] for s in steps], steps)

    def published_times(self) -> Optional[List[float]]:
        """The time values, or None when there is no dataset to take them from (what
        ParaView's TimestepValues property shows: a failure is reported by the update)."""
        import motes

        try:
            return self.time_values() if self._path else None
        except (motes.MotesError, OSError):
            return None

    def _publish_times(self, info) -> List[float]:
        """Puts the time steps into VTK's output information; returns them."""
        executive = self.GetExecutive()
        info.Remove(executive.TIME_STEPS())
        info.Remove(executive.TIME_RANGE())
        times = self.time_values()
        for t in times:
            info.Append(executive.TIME_STEPS(), t)
        if times:
            info.Append(executive.TIME_RANGE(), times[0])
            info.Append(executive.TIME_RANGE(), times[-1])
        return times

    def _step_at(self, info) -> int:
        """The step whose time is the last at or before the time asked for (the first when
        none is asked, or the time comes before every step)."""
        import motes

        steps = self.steps()
        if not steps:
            raise motes.UsageError("the dataset has no steps to read")
        executive = self.GetExecutive()
        if not info.Has(executive.UPDATE_TIME_STEP()):
            return steps[0]
        k = int(np.searchsorted(self.time_values(), info.Get(executive.UPDATE_TIME_STEP()), side="right")) - 1
        return steps[max(k, 0)]

    # --- failures: a message, not a traceback ---------------------------------------------
    def ProcessRequest(self, request, inInfo, outInfo):
        import motes

        try:
            ok = VTKPythonAlgorithmBase.ProcessRequest(self, request, inInfo, outInfo)
        except (motes.MotesError, OSError) as e:
            self.report_error(str(e))
            return 0
        if ok and request.Has(vtkDemandDrivenPipeline.REQUEST_DATA()):
            self._error = ""
        return ok

    def report_error(self, message: str) -> None:
        """Keeps ``message`` (GetErrorMessage) and reports it as vtkErrorMacro does: to the
        ErrorEvent observers, else to vtkOutputWindow; once while the settings stay the same."""
        if message == self._error and self._error_time == self.GetMTime():
            return  # said already (the pipeline asks again: information, then data)
        self._error, self._error_time = message, self.GetMTime()
        where = f" ({self._path})" if self._path else ""
        text = f"{self.label}{where}: {message}"
        if self.HasObserver(vtkCommand.ErrorEvent):
            self.InvokeEvent(vtkCommand.ErrorEvent, text)
        else:
            vtkOutputWindow.GetInstance().DisplayErrorText(f"ERROR: {text}\n")
