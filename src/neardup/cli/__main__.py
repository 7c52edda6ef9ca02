"""``python -m neardup.cli``: the same as the ``neardup`` command."""

import sys

from . import main

sys.exit(main())
