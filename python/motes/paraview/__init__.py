"""motes in ParaView and VTK: :class:`~motes.paraview.reader.MotesParticleReader` (a VTK
algorithm, usable with the pip ``vtk`` wheel alone) and the ParaView plugin file that wraps
it (``MotesReader.py`` in this folder, whose path :func:`plugin_path` gives and
``motes paraview-plugin`` prints).

Debian's ParaView 5.11 runs on the system Python 3.11, whose ``inspect`` no longer has the
``getargspec`` its Python-plugin loader imports: :func:`install` puts a ``.pth`` file in that
Python's user site folder which defines it again (from ``getfullargspec``) before ParaView
loads any plugin. Nothing else of motes' environment is put on ParaView's path: the plugin
imports motes from the folder it lies in.
"""

from __future__ import annotations

import os
import subprocess
from typing import Optional

__all__ = ["install", "plugin_path", "PTH_NAME"]

#: The file :func:`install` writes in ParaView's Python's user site-packages.
PTH_NAME = "motes-paraview-getargspec.pth"

# One line: a .pth line that starts with "import" is run (exec, in site's function) when that
# Python starts; the names it imports are gone after, so the function takes what it uses as
# default values, bound when it is made.
_SHIM = ("import inspect; inspect.__dict__.setdefault('getargspec', lambda f, _spec=inspect.getfullargspec, "
         "_tuple=__import__('collections').namedtuple('ArgSpec', 'args varargs keywords defaults'): "
         "_tuple(*_spec(f)[:4]))\n")


def plugin_path() -> str:
    """The path of the ParaView plugin file (load it with Tools > Manage Plugins > Load New,
    or ``LoadPlugin(path, ns=globals())``)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "MotesReader.py")


def install(python: str = "/usr/bin/python3") -> Optional[str]:
    """Prepares ParaView's Python (``python``; Debian's ParaView runs on the system one) for
    motes' plugin: writes :data:`PTH_NAME` into its user site-packages (created if needed).
    Returns the file written, or None when that Python has ``inspect.getargspec`` already or
    does not exist."""
    if not os.path.exists(python):
        return None
    probe = "import inspect, site; print(hasattr(inspect, 'getargspec')); print(site.getusersitepackages())"
    has, folder = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")[:2]
    if has == "True":
        return None
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, PTH_NAME)
    with open(path, "w") as fh:
        fh.write(_SHIM)
    return path
