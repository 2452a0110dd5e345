"""``newscrawl demo``: the whole pipeline on a bundled sample portal, offline, in one command.

The sample portal is data: the files under ``site/`` are served as they are, a URL path to the
file of that path (``/`` to ``site/index.html``), by :mod:`newscrawl.demo.portal`. There are a start
page and list pages 2 and 3 (pagination) linking to the article pages under ``news/``; article
1006 is GBK-encoded while its HTML declares iso-8859-1; articles 2001 and 2002 are reprints of 1002
and 1005 (a source line or a footer added, a sentence reworded), which the crawl drops as
near-duplicates. Every text was written for this demo; the places and people are made up.
``demo-sites.toml`` is the sites file of the demo's crawl (``{base}``: the portal's address).

:mod:`newscrawl.demo.run` serves the portal, runs the real ``scrapy crawl portal`` on it and prints
what the crawl stored and dropped.
"""

from __future__ import annotations

from newscrawl.demo.run import DemoError, run_demo

__all__ = ["DemoError", "run_demo"]
