"""``python -m newscrawl.cli``: the ``newscrawl`` command."""

import sys

from newscrawl.cli import main

sys.exit(main())
