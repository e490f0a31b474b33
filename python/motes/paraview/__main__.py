"""``python -m motes.paraview``: prints the path of motes' ParaView plugin file (what
``motes paraview-plugin`` prints)."""
from motes.cli import main

raise SystemExit(main(["paraview-plugin"]))
