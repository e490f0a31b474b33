"""``motes paraview-plugin``: the path of motes' ParaView plugin, and ParaView's Python made
ready for it."""

from __future__ import annotations

from .options import Formatter


def add_parser(subs):
    p = subs.add_parser(
        "paraview-plugin", formatter_class=Formatter,
        help="print the path of the ParaView plugin (and prepare ParaView's Python for it)",
        description="Prints the path of motes' ParaView plugin file: load it in ParaView with Tools > Manage "
                    "Plugins > Load New, or LoadPlugin(path, ns=globals()) in pvpython/pvbatch. With --install, "
                    "first prepares ParaView's Python (Debian's ParaView 5.11 runs on the system python3, whose "
                    "inspect module lacks the getargspec its plugin loader imports): a .pth file in that "
                    "Python's user site-packages defines it again.")
    p.add_argument("--install", action="store_true", help="prepare ParaView's Python (a .pth file) first")
    p.add_argument("--python", default="/usr/bin/python3", help="ParaView's Python (default: %(default)s)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from .. import paraview

    if args.install:
        written = paraview.install(args.python)
        if written:
            print(f"wrote {written}", flush=True)
    print(paraview.plugin_path())
    return 0
