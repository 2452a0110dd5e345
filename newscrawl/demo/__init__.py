"""``newscrawl demo``: the whole pipeline on a bundled sample portal (``site/``, served as files),
offline, in one command; ``demo-sites.toml`` is its sites file. README.md ("Try it").
"""

from __future__ import annotations

from newscrawl.demo.run import DemoError, run_demo

__all__ = ["DemoError", "run_demo"]
