"""motes' ParaView plugin: load this file in ParaView (Tools > Manage Plugins > Load New, or
``LoadPlugin(path, ns=globals())`` in pvpython/pvbatch); ``motes paraview-plugin`` prints its
path and prepares ParaView's Python for it. It registers two readers of a dataset's
``manifest.json`` (what File > Open picks in a ``.motes`` folder; ParaView asks which, and
``OpenDataFile`` takes the first): "Motes Particles" (``MotesParticles(FileName=...)``): one
species as points with every chosen column, its time steps, and the level of detail, box and
``where`` expression as properties, each update one motes query; and "Motes Field"
(``MotesField(FileName=..., Field=...)``): a grid field at a level of detail as an image, a
rectilinear grid, or a thetaMode field resampled on a Cartesian image at ``Resolution``.
A failure is a message in the Output Messages window, kept in the ``ErrorMessage``
information property (empty after an update that succeeded).

ParaView runs on its own Python (Debian: the system python3), not on the environment motes
was installed into. The lines before the readers make motes importable there without putting
that environment's site-packages on ParaView's path (its pip ``vtk`` would shadow ParaView's
and crash it): the ``motes`` package is loaded from the folder this file lies in."""

import importlib.util
import os
import sys


def _import_motes():
    """The motes package this file belongs to, imported by its location."""
    try:
        import motes  # already importable (ParaView started from motes' environment, or a .pth)
        return motes
    except ImportError:
        pass
    folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("motes", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules["motes"] = module
    spec.loader.exec_module(module)
    return module


# ParaView ends without finalizing Python: the objects its pipeline holds are alive then,
# which nanobind would report as leaks.
_import_motes()._core.set_leak_warnings(False)

from motes.paraview.field_reader import MotesFieldReader  # noqa: E402
from motes.paraview.reader import MotesParticleReader  # noqa: E402

try:
    from paraview.util.vtkAlgorithm import smdomain, smhint, smproperty, smproxy
except ImportError:  # the pip vtk wheel alone: the decorators do nothing
    class _Inert:
        def __getattr__(self, name):
            return lambda *args, **kwargs: (lambda f: f)

    smdomain = smhint = smproperty = smproxy = _Inert()

#: The file of a dataset that File > Open picks (a dataset is a folder).
MANIFEST = "manifest.json"


@smproxy.reader(name="MotesParticles", label="Motes Particles", filename_patterns=MANIFEST,
                file_description="motes dataset: particles")
class MotesParticles(MotesParticleReader):
    """ParaView's face of :class:`motes.paraview.reader.MotesParticleReader`."""

    @smproperty.stringvector(name="FileName")
    @smdomain.filelist()
    @smhint.filechooser(extensions="json", file_description="motes dataset (manifest.json)")
    def SetFileName(self, name):
        MotesParticleReader.SetFileName(self, name)

    @smproperty.stringvector(name="Species", default_values="")
    def SetSpecies(self, species):
        MotesParticleReader.SetSpecies(self, species)

    @smproperty.stringvector(name="Columns", default_values="")
    def SetColumns(self, columns):
        MotesParticleReader.SetColumns(self, columns)

    @smproperty.doublevector(name="Quality", default_values=1.0)
    @smdomain.doublerange(min=0.0, max=1.0)
    def SetQuality(self, quality):
        MotesParticleReader.SetQuality(self, quality)

    @smproperty.doublevector(name="Fraction", default_values=0.0)
    @smdomain.doublerange(min=0.0, max=1.0)
    def SetFraction(self, fraction):
        MotesParticleReader.SetFraction(self, fraction)

    @smproperty.intvector(name="UseBox", default_values=0)
    @smdomain.xml('<BooleanDomain name="bool"/>')
    def SetUseBox(self, use):
        MotesParticleReader.SetUseBox(self, use)

    @smproperty.doublevector(name="Box", default_values=[0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    def SetBox(self, x0, y0, z0, x1, y1, z1):
        MotesParticleReader.SetBox(self, x0, y0, z0, x1, y1, z1)

    @smproperty.stringvector(name="Where", default_values="")
    def SetWhere(self, where):
        MotesParticleReader.SetWhere(self, where)

    @smproperty.doublevector(name="TimestepValues", information_only="1", si_class="vtkSITimeStepsProperty")
    def GetTimestepValues(self):
        return self.published_times()

    @smproperty.stringvector(name="ErrorMessage", information_only="1")
    def GetErrorMessage(self):
        return MotesParticleReader.GetErrorMessage(self)


# Named to sort after "MotesParticles": of the readers that take a file, OpenDataFile uses the first
# by name. The label makes the scripts' name, MotesField(...).
@smproxy.reader(name="MotesStructuredField", label="Motes Field", filename_patterns=MANIFEST,
                file_description="motes dataset: a grid field")
class MotesField(MotesFieldReader):
    """ParaView's face of :class:`motes.paraview.field_reader.MotesFieldReader`: a grid field
    of a motes dataset at a level of detail (Field: a list of the dataset's fields)."""

    @smproperty.stringvector(name="FileName")
    @smdomain.filelist()
    @smhint.filechooser(extensions="json", file_description="motes dataset (manifest.json)")
    def SetFileName(self, name):
        MotesFieldReader.SetFileName(self, name)

    @smproperty.stringvector(name="FieldNames", information_only="1")
    def GetFieldNames(self):
        return self.field_names_or_none()

    @smproperty.stringvector(name="Field", default_values="")
    @smdomain.xml('<StringListDomain name="list"><RequiredProperties>'
                  '<Property name="FieldNames" function="StringInfo"/></RequiredProperties></StringListDomain>')
    def SetField(self, name):
        MotesFieldReader.SetField(self, name)

    @smproperty.intvector(name="Level", default_values=0)
    @smdomain.intrange(min=0, max=16)
    def SetLevel(self, level):
        MotesFieldReader.SetLevel(self, level)

    @smproperty.stringvector(name="Component", default_values="")
    def SetComponent(self, component):
        MotesFieldReader.SetComponent(self, component)

    @smproperty.intvector(name="Resolution", default_values=[0, 0, 0])
    def SetResolution(self, nx, ny, nz):
        MotesFieldReader.SetResolution(self, nx, ny, nz)

    @smproperty.doublevector(name="TimestepValues", information_only="1", si_class="vtkSITimeStepsProperty")
    def GetTimestepValues(self):
        return self.published_times()

    @smproperty.stringvector(name="ErrorMessage", information_only="1")
    def GetErrorMessage(self):
        return MotesFieldReader.GetErrorMessage(self)
