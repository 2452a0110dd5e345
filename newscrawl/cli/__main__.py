"""``python -m newscrawl.cli``: the ``newscrawl`` command (``crawl`` included)."""

import sys

from newscrawl._entry import main

sys.exit(main())
