"""``python -m motes.cli``: the ``motes`` command."""

import sys

from . import main

sys.exit(main())
